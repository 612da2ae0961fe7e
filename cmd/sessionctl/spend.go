package main

// Spend limits on the command line: the --limit flag of create and
// limits, the spend block of show, and the reserve, settle and release
// commands. Money is written as a decimal amount with its currency code
// ("2.50USD") and kept as integer micro-units: no floating point between
// the flag and the database.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// exitSpend is the exit status of a reservation refused by a spend limit
// (reserve). The other refusals of reserve, settle and release exit as
// use's do (see exit.go).
const exitSpend = 12

// limitList is a repeatable --limit METRIC=AMOUNT[/WINDOW] flag:
// "cost=2.50USD/day", "tokens=100000/hour", "input=5000".
type limitList []store.SpendLimit

func (l *limitList) String() string {
	var parts []string
	for _, x := range *l {
		parts = append(parts, x.String())
	}
	return strings.Join(parts, ",")
}

// Set parses one limit (store.ParseSpendLimit).
func (l *limitList) Set(s string) error {
	lim, err := store.ParseSpendLimit(s)
	if err != nil {
		return reason(err)
	}
	*l = append(*l, lim)
	return nil
}

// reason is an invalid-input error's reason alone, for a flag's message
// (the flag package names the flag and the value).
func reason(err error) error {
	var ie *store.InvalidInputError
	if errors.As(err, &ie) {
		return errors.New(ie.Reason)
	}
	return err
}

// amountFlags are the amount flags of reserve and settle.
type amountFlags struct {
	input, output *int64
	cost          *string
}

func addAmountFlags(fs interface {
	Int64(string, int64, string) *int64
	String(string, string, string) *string
}, what string) amountFlags {
	return amountFlags{
		input:  fs.Int64("input-tokens", 0, what+" input (prompt) tokens, `N`"),
		output: fs.Int64("output-tokens", 0, what+" output (completion) tokens, `N`"),
		cost:   fs.String("cost", "", what+" cost, an `AMOUNT` with its currency code, like 0.25USD"),
	}
}

func (f amountFlags) amount() (store.SpendAmount, string, error) {
	a := store.SpendAmount{InputTokens: *f.input, OutputTokens: *f.output}
	var cur string
	if *f.cost != "" {
		if strings.HasPrefix(*f.cost, "-") {
			return a, "", fmt.Errorf("%s: must not be negative", humanize.Escape(*f.cost))
		}
		var err error
		if a.CostMicros, cur, err = store.ParseMoney(*f.cost); err != nil {
			return a, "", reason(err)
		}
	}
	return a, cur, nil
}

// loadSpend reads the spend of a governed session; nil when it has no
// limits, its agent has none and nothing is reserved.
func loadSpend(ctx context.Context, st cliStore, id string) (*view.Spend, error) {
	s, err := st.Spend().Status(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(s.Limits) == 0 && s.Live == 0 {
		return nil, nil
	}
	v := view.NewSpend(s)
	return &v, nil
}

// spendRefusal maps an error of reserve, settle or release to its exit
// status: a spend limit 12, the others as use's.
func spendRefusal(err error) (refusal, bool) {
	if errors.Is(err, store.ErrInvalidInput) {
		return refusal{}, false
	}
	if errors.Is(err, store.ErrSpendLimitExceeded) {
		return refusal{exitSpend, "spend"}, true
	}
	return useRefusal(err)
}

func runReserve(ctx context.Context, g *globals, args []string) error {
	sp := specs.Reserve(helpExits)
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "the presenting agent `ID`; refused when it is not the session's agent")
	requestID := fs.String("request-id", "", "the reservation's `ID` (default: a random one); a retry returns the first outcome")
	ttl := cliflags.DurationFlag(fs, "ttl", store.DefaultReservationTTL, "the reservation lapses after `DURATION` unless settled or released")
	amounts := addAmountFlags(fs, "the upper bound of")
	asJSON := fs.Bool("json", false, "print the reservation as JSON")
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	amount, cur, err := amounts.amount()
	if err != nil {
		return g.usageErr(sp.Name, "--cost: %v", err)
	}
	req := store.ReserveRequest{SessionID: pos[0], AgentID: *agent, RequestID: *requestID, Amount: amount, Currency: cur, TTL: *ttl}
	if _, err := req.Normalize(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		r, err := st.Spend().Reserve(ctx, req)
		if err != nil {
			if ref, ok := spendRefusal(err); ok {
				fmt.Fprintf(g.stderr, "sessionctl reserve: refused (%s): %s\n", ref.kind, render.SpendRefusal(err, req.SessionID, req.RequestID))
				return exitStatus(ref.code)
			}
			return err
		}
		return g.say(*asJSON, view.NewReservation(r), "%s\n", r.ID)
	}))
}

func runSettle(ctx context.Context, g *globals, args []string) error {
	sp := specs.Settle(helpExits)
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "the presenting agent `ID`; refused when it is not the session's agent")
	conversation := fs.String("conversation", "", "also add the usage to conversation `ID`")
	amounts := addAmountFlags(fs, "the actual")
	asJSON := fs.Bool("json", false, "print the reservation as JSON")
	pos, err := g.parseArgs(fs, sp, args, 2, 2)
	if err != nil {
		return err
	}
	actual, cur, err := amounts.amount()
	if err != nil {
		return g.usageErr(sp.Name, "--cost: %v", err)
	}
	req := store.SettleRequest{SessionID: pos[0], RequestID: pos[1], AgentID: *agent, Actual: actual, Conversation: *conversation}
	if err := req.Validate(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	return g.finishReservation(ctx, sp.Name, *asJSON, pos, func(st cliStore) (store.Reservation, error) {
		if cur != "" {
			// The store keeps the currency on the reservation: a cost in
			// another one is a mistake of the caller.
			r, err := st.Spend().Reservation(ctx, req.SessionID, req.RequestID)
			if err == nil && r.Currency != cur {
				return store.Reservation{}, store.Invalid("cost", "is not in the currency of the reservation")
			}
		}
		return st.Spend().Settle(ctx, req)
	})
}

func runRelease(ctx context.Context, g *globals, args []string) error {
	sp := specs.Release(helpExits)
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "the presenting agent `ID`; refused when it is not the session's agent")
	asJSON := fs.Bool("json", false, "print the reservation as JSON")
	pos, err := g.parseArgs(fs, sp, args, 2, 2)
	if err != nil {
		return err
	}
	req := store.ReleaseRequest{SessionID: pos[0], RequestID: pos[1], AgentID: *agent}
	if err := req.Validate(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	return g.finishReservation(ctx, sp.Name, *asJSON, pos, func(st cliStore) (store.Reservation, error) {
		return st.Spend().Release(ctx, req)
	})
}

// finishReservation runs a settle or a release and prints its outcome.
func (g *globals) finishReservation(ctx context.Context, name string, asJSON bool, pos []string, fn func(st cliStore) (store.Reservation, error)) error {
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		r, err := fn(st)
		if err != nil {
			if ref, ok := spendRefusal(err); ok {
				fmt.Fprintf(g.stderr, "sessionctl %s: refused (%s): %s\n", name, ref.kind, render.SpendRefusal(err, pos[0], pos[1]))
				return exitStatus(ref.code)
			}
			return err
		}
		if asJSON {
			return jsonout.Write(g.stdout, view.NewReservation(r))
		}
		switch r.Status {
		case store.ReservationSettled:
			fmt.Fprintf(g.stdout, "settled %s: %s of %s reserved\n", r.ID, view.AmountText(r.Actual, r.Currency), view.AmountText(r.Amount, r.Currency))
		default:
			fmt.Fprintf(g.stdout, "%s %s: %s\n", r.Status, r.ID, view.AmountText(r.Amount, r.Currency))
		}
		return nil
	}))
}

func runLimits(ctx context.Context, g *globals, args []string) error {
	sp := specs.Limits
	fs := g.newFlags(sp)
	var limits limitList
	fs.Var(&limits, "limit", "a spend limit `METRIC=AMOUNT[/WINDOW]`, repeatable (replaces the agent's limits)")
	clear := fs.Bool("clear", false, "remove every limit of the agent")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	if *clear && len(limits) > 0 {
		return g.usageErr(sp.Name, "--clear and --limit exclude each other")
	}
	if err := store.ValidateID("agent", pos[0]); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	if _, err := store.NormalizeSpendLimits("limit", limits); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	// Setting limits needs a store that exists: a mistyped --db must not
	// make an empty one.
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		if *clear || len(limits) > 0 {
			if err := st.Spend().SetAgentLimits(ctx, pos[0], limits); err != nil {
				return err
			}
		}
		status, err := st.Spend().AgentStatus(ctx, pos[0])
		if err != nil {
			return err
		}
		v := view.NewSpend(status)
		if *asJSON {
			if err := jsonout.Write(g.stdout, struct {
				AgentID string `json:"agent_id"`
				view.Spend
			}{pos[0], v}); err != nil {
				return err
			}
			return nil
		}
		if len(v.Limits) == 0 {
			fmt.Fprintf(g.stdout, "agent %s has no spend limits\n", pos[0])
			return nil
		}
		fmt.Fprintf(g.stdout, "agent %s:\n", pos[0])
		if err := render.SpendDetails(g.stdout, v); err != nil {
			return err
		}
		return nil
	}))
}
