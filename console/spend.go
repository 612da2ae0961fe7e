package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// A governed session's page shows its spend (its limits and its agent's,
// with what is spent, reserved and remaining in each current window), its
// live reservations and its audit events.

// limitView is one limit of a session's spend, as the page shows it.
type limitView struct {
	store.LimitStatus
	// Remaining is what a new reservation may still ask for.
	Remaining int64
	// WindowEnd is when the current window ends (zero for the lifetime).
	WindowEnd string
	// Unit is "tokens", or the currency of a cost limit; amounts of money
	// are shown in units of it (Fmt).
	Unit string
}

// fmtAmount formats an amount of the limit's metric: tokens as a number,
// money in units of the currency.
func (l limitView) Fmt(v int64) string {
	if l.Metric == store.MetricCost {
		return humanize.Money(v, "")
	}
	return fmtNum(v)
}

// Used is the share of the limit spent or reserved, in percent (0 to
// 100), for the bar of the limit.
func (l limitView) Used() int {
	if l.Limit <= 0 {
		if l.Spent+l.Reserved > 0 {
			return 100
		}
		return 0
	}
	return int(min(100, (l.Spent+l.Reserved)*100/l.Limit))
}

// spendView is the spend part of a governed session's page; its JSON is
// view.Spend's with the reservations listed (units.go).
type spendView struct {
	Limits []limitView
	// Live counts the session's reservations still held; Reservations
	// lists them (at most maxLiveShown).
	Live         int64
	Reservations []store.Reservation
	// More is true when the session holds more live reservations than
	// the page lists.
	More bool
	// status is the spend status the limits were read from.
	status store.SpendStatus
}

// maxLiveShown bounds the live reservations a session's page lists.
const maxLiveShown = 100

// errEnough stops the reading of reservations once the page has enough.
var errEnough = errors.New("enough")

// sessionSpend reads a governed session's spend status and live
// reservations. The reservations are read from one snapshot of the
// session's spend state (Spend.ExportEach); those that lapsed by the
// console's clock are left out, as Status leaves them out.
func (c *console) sessionSpend(ctx context.Context, s store.Session) (spendView, error) {
	sp := c.st.Spend()
	v := spendView{Limits: []limitView{}, Reservations: []store.Reservation{}}
	status, err := sp.Status(ctx, s.ID)
	if err != nil {
		return v, err
	}
	v.Live, v.status = status.Live, status
	for _, l := range status.Limits {
		lv := limitView{LimitStatus: l, Remaining: l.Remaining(), Unit: "tokens"}
		if l.Metric == store.MetricCost {
			lv.Unit = l.Currency
		}
		if end := l.Window.End(l.WindowStart); !end.IsZero() {
			lv.WindowEnd = fmtTime(end)
		}
		v.Limits = append(v.Limits, lv)
	}
	if status.Live == 0 {
		return v, nil
	}
	now := c.now()
	err = sp.ExportEach(ctx, []string{s.ID}, func(store.SpendLimitRecord) error { return nil }, func(r store.ReservationRecord) error {
		if r.SessionID != s.ID || r.Status != store.ReservationReserved || !now.Before(r.ExpiresAt) {
			return nil
		}
		if len(v.Reservations) == maxLiveShown {
			v.More = true
			return errEnough
		}
		v.Reservations = append(v.Reservations, r.Reservation)
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return v, err
	}
	return v, nil
}

// sessionAudit reads one page of a governed session's audit events
// (?audit_after= pages on), from its agent's chain.
func (c *console) sessionAudit(ctx context.Context, r *http.Request, s store.Session) ([]auditEvent, string, error) {
	page, err := c.st.Audit().List(ctx, store.AuditFilter{AgentID: s.AgentID, SessionID: s.ID, After: r.URL.Query().Get("audit_after"), Limit: 100})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if page.Next != "" {
		next = withQuery(c.link("governed", s.ID), "audit_after", page.Next) + "#audit"
	}
	return auditEvents(page.Items), next, nil
}
