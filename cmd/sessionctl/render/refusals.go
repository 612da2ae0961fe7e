package render

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// UseRefusal explains a refusal of a Use to the operator. The store's
// Error() strings are deliberately opaque (they may go back to an
// untrusted agent); the operator running sessionctl sees the typed
// details.
func UseRefusal(err error, req store.UseRequest) string {
	var (
		budget *store.BudgetError
		tool   *store.ToolError
		rate   *store.RateLimitError
		exp    *store.ExpiredError
		agent  *store.AgentMismatchError
		conf   *store.ConflictError
	)
	switch {
	case errors.As(err, &budget):
		return fmt.Sprintf("%v: %d of %d calls made, %d requested", err, budget.Used, budget.Limit, budget.Requested)
	case errors.As(err, &tool):
		return fmt.Sprintf("%v: %s", err, tool.Tool)
	case errors.As(err, &rate):
		return fmt.Sprintf("%v: %d of %d calls made in the current %s window, %d requested",
			err, rate.WindowCalls, rate.Limit, humanize.Duration(rate.Window), rate.Requested)
	case errors.As(err, &exp):
		return fmt.Sprintf("%v at %s", err, tablefmt.Time(exp.ExpiresAt))
	case errors.As(err, &agent):
		return fmt.Sprintf("the session belongs to %s, not %s", agent.Expected, agent.Actual)
	case errors.As(err, &conf):
		return fmt.Sprintf("request id %s was used with different tools", req.RequestID)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("%v: %s", err, req.SessionID)
	}
	return err.Error()
}

// SpendRefusal explains a refusal of reserve, settle or release to the
// operator (the store's Error() strings are opaque on purpose).
func SpendRefusal(err error, session, request string) string {
	var se *store.SpendLimitError
	var exp *store.ExpiredError
	var agent *store.AgentMismatchError
	var conf *store.ConflictError
	var missing *store.NotFoundError
	switch {
	case errors.As(err, &se):
		amount := func(n int64) string {
			if se.Metric == store.MetricCost {
				return humanize.Money(n, se.Currency)
			}
			return strconv.FormatInt(n, 10)
		}
		window := string(se.Window)
		if se.Window != store.WindowLifetime {
			window += " from " + tablefmt.Time(se.WindowStart)
		}
		return fmt.Sprintf("%v: the %s %s limit (%s) is %s, %s spent and %s reserved; %s requested",
			err, se.Scope, se.Metric, window, amount(se.Limit), amount(se.Spent), amount(se.Reserved), amount(se.Requested))
	case errors.As(err, &exp):
		return fmt.Sprintf("%v at %s", err, tablefmt.Time(exp.ExpiresAt))
	case errors.As(err, &agent):
		return fmt.Sprintf("the session belongs to %s, not %s", agent.Expected, agent.Actual)
	case errors.As(err, &conf):
		return fmt.Sprintf("reservation %s: %s", request, conf.Reason)
	case errors.As(err, &missing) && missing.Resource == "conversation":
		return fmt.Sprintf("%v: %s", err, missing.ID)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("%v: %s %s", err, session, request)
	}
	return err.Error()
}

// SpendDetails writes the spend block (limits, spent, reserved, live
// reservations) as aligned lines.
func SpendDetails(w io.Writer, v view.Spend) error {
	tw := tablefmt.NewWriter(w)
	for _, l := range v.Limits {
		window := l.Window
		if start, err := time.Parse(time.RFC3339Nano, l.WindowStart); err == nil {
			window += " from " + tablefmt.Time(start) // as every table writes a time
		}
		fmt.Fprintf(tw, "  %s %s\t%v spent, %v reserved of %v (%v left)\t%s\n", l.Scope, l.Metric,
			l.Spent, l.Reserved, l.Limit, l.Remaining, window)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "  %d live %s\n", v.Live, clitext.Plural(int(v.Live), "reservation", "reservations"))
	return err
}
