package archive

// Governed sessions: restored in one transaction exactly as exported
// (counters, rate window, status, times), then their spend limits and
// reservations and their agents' limits (the "spend" section).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

var governedSection = section{
	key:     "governed_sessions",
	export:  exportGoverned,
	restore: restoreGoverned,
	more:    map[string]restoreFunc{"spend": restoreSpend},
}

// GovernedSession is the one JSON view of a governed session: in export
// documents, in sessionctl's output and in the console's JSON twins. Field
// names are stable; durations are whole milliseconds (*_ms, humanize.Millis),
// times RFC 3339 UTC (humanize.Time), absent when zero (a stored session
// always has all three). RemainingBudget is derived (written for people
// reading the file, ignored on import).
type GovernedSession struct {
	ID                    string   `json:"id"`
	AgentID               string   `json:"agent_id"`
	Status                string   `json:"status"`
	CallsMade             int64    `json:"calls_made"`
	CallBudget            int64    `json:"call_budget"`
	RemainingBudget       int64    `json:"remaining_budget"`
	AuthorizedTools       []string `json:"authorized_tools"`
	AuthorizedCredentials []string `json:"authorized_credentials"`
	DelegationChain       []string `json:"delegation_chain"`
	DeclaredIntent        string   `json:"declared_intent"`
	Sensitivity           string   `json:"sensitivity"`
	RateLimit             int64    `json:"rate_limit"`
	RateWindowMS          int64    `json:"rate_window_ms"`
	RateWindowStart       string   `json:"rate_window_start,omitempty"`
	RateWindowCalls       int64    `json:"rate_window_calls"`
	TimeLimitMS           int64    `json:"time_limit_ms"`
	CreatedAt             string   `json:"created_at,omitempty"`
	ExpiresAt             string   `json:"expires_at,omitempty"`
}

// NewGovernedSession returns s as an export record.
func NewGovernedSession(s store.Session) GovernedSession {
	return GovernedSession{
		ID:                    s.ID,
		AgentID:               s.AgentID,
		Status:                string(s.Status),
		CallsMade:             s.CallsMade,
		CallBudget:            s.CallBudget,
		RemainingBudget:       s.RemainingBudget(),
		AuthorizedTools:       nonNil(s.AuthorizedTools),
		AuthorizedCredentials: nonNil(s.AuthorizedCredentials),
		DelegationChain:       nonNil(s.DelegationChain),
		DeclaredIntent:        s.DeclaredIntent,
		Sensitivity:           string(s.Sensitivity),
		RateLimit:             s.RateLimit,
		RateWindowMS:          humanize.Millis(s.RateWindow),
		RateWindowStart:       formatTime(s.RateWindowStart),
		RateWindowCalls:       s.RateWindowCalls,
		TimeLimitMS:           humanize.Millis(s.TimeLimit),
		CreatedAt:             formatTime(s.CreatedAt),
		ExpiresAt:             formatTime(s.ExpiresAt),
	}
}

// Session converts the record back to a store.Session (RemainingBudget is
// derived and ignored). It checks the times' syntax only; an import also
// checks the session with ValidateStored.
func (v GovernedSession) Session() (store.Session, error) {
	s := store.Session{
		ID:                    v.ID,
		AgentID:               v.AgentID,
		Status:                store.Status(v.Status),
		CallsMade:             v.CallsMade,
		CallBudget:            v.CallBudget,
		AuthorizedTools:       nonNil(v.AuthorizedTools),
		AuthorizedCredentials: nonNil(v.AuthorizedCredentials),
		DelegationChain:       nonNil(v.DelegationChain),
		DeclaredIntent:        v.DeclaredIntent,
		Sensitivity:           store.Sensitivity(v.Sensitivity),
		RateLimit:             v.RateLimit,
		RateWindow:            time.Duration(v.RateWindowMS) * time.Millisecond,
		RateWindowCalls:       v.RateWindowCalls,
		TimeLimit:             time.Duration(v.TimeLimitMS) * time.Millisecond,
	}
	var err error
	if s.RateWindowStart, err = humanize.ParseTime("rate_window_start", v.RateWindowStart); err != nil {
		return s, err
	}
	if s.CreatedAt, err = humanize.ParseTime("created_at", v.CreatedAt); err != nil {
		return s, err
	}
	if s.ExpiresAt, err = humanize.ParseTime("expires_at", v.ExpiresAt); err != nil {
		return s, err
	}
	return s, nil
}

// formatTime writes t as RFC 3339 in UTC with as many fraction digits as
// needed ("" for the zero time).
func formatTime(t time.Time) string { return humanize.Time(t) }

// exportGoverned writes every governed session, or those of x.ids, then
// their spend state (the "spend" section: limits with their counters,
// agents' limits included, and reservations with their holds).
func exportGoverned(ctx context.Context, x *exporter) error {
	ids, err := exportGovernedSessions(ctx, x)
	if err != nil {
		return err
	}
	x.out.open("spend", '{')
	// The reservations array opens at the first reservation (after the
	// last limit), or after the limits when there is none.
	x.out.open("limits", '[')
	inLimits := true
	endLimits := func() {
		if inLimits {
			x.out.close(']')
			x.out.open("reservations", '[')
			inLimits = false
		}
	}
	err = x.st.Spend().ExportEach(ctx, ids,
		func(l store.SpendLimitRecord) error {
			x.out.value("", l)
			return x.out.err
		},
		func(r store.ReservationRecord) error {
			endLimits()
			x.out.value("", r)
			return x.out.err
		})
	if err != nil {
		return err
	}
	endLimits()
	x.out.close(']')
	x.out.close('}')
	return nil
}

// exportGovernedSessions writes the governed_sessions section and returns
// the ids written when x.ids selects them (nil: every session).
func exportGovernedSessions(ctx context.Context, x *exporter) ([]string, error) {
	gov := x.st.Governance()
	x.out.open("governed_sessions", '[')
	defer x.out.close(']')
	add := func(s store.Session) {
		x.out.value("", NewGovernedSession(s))
		x.tick()
	}
	if x.ids != nil {
		written := []string{}
		for _, id := range x.ids {
			s, err := gov.Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			add(s)
			written = append(written, id)
		}
		return written, nil
	}
	for s, err := range store.AllGoverned(ctx, gov, store.ListFilter{}) {
		if err != nil {
			return nil, err
		}
		add(s)
	}
	return nil, nil
}

// restoreGoverned reads the governed sessions of a document and restores
// each exactly as exported (counters, rate window, status, times).
func restoreGoverned(ctx context.Context, x *importer, in *jsonIn, _ int) error {
	seen := map[string]bool{}
	return in.array(func(i int) error {
		var v GovernedSession
		if err := in.decode(&v); err != nil {
			return err
		}
		s, err := v.Session()
		if err == nil {
			err = s.ValidateStored()
		}
		if err != nil {
			return fmt.Errorf("governed_sessions[%d]: %w", i, asInvalid(err))
		}
		if seen[s.ID] {
			return store.Invalid("governed_sessions", "id "+s.ID+" appears twice")
		}
		seen[s.ID] = true
		return x.put(&x.counts.Governed, "governed session "+s.ID, func(w store.RecordWriter) (bool, error) {
			return w.PutGovernedSession(s)
		})
	})
}

// restoreSpend reads the spend section of a document (version 3 on): the
// limits, then the reservations, each restored exactly as exported in the
// import's transaction. They are not counted (they belong to the governed
// sessions); an existing one is a conflict, or skipped with SkipExisting.
func restoreSpend(ctx context.Context, x *importer, in *jsonIn, version int) error {
	if version < 3 {
		return store.Invalid("spend", fmt.Sprintf("not part of export version %d", version))
	}
	ok, err := in.delim('{', true)
	if err != nil || !ok {
		return err
	}
	var records int64
	seen := map[string]bool{}
	for {
		k, more, err := in.key()
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if seen[k] {
			return store.Invalid("spend", k+" appear twice")
		}
		seen[k] = true
		switch k {
		case "limits":
			err = in.array(func(i int) error {
				var l store.SpendLimitRecord
				if err := in.decode(&l); err != nil {
					return err
				}
				return x.put(&records, fmt.Sprintf("spend.limits[%d] (limit %s)", i, l.ID), func(w store.RecordWriter) (bool, error) {
					return w.PutSpendLimit(l)
				})
			})
		case "reservations":
			err = in.array(func(i int) error {
				var r store.ReservationRecord
				if err := in.decode(&r); err != nil {
					return err
				}
				return x.put(&records, fmt.Sprintf("spend.reservations[%d] (reservation %s of session %s)", i, r.ID, r.SessionID), func(w store.RecordWriter) (bool, error) {
					return w.PutReservation(r)
				})
			})
		default:
			return store.Invalid("spend", fmt.Sprintf("unknown field %q", k))
		}
		if err != nil {
			return err
		}
	}
}
