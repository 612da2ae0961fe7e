package store

import (
	"context"
	"time"
)

// Totaler is implemented by the stores of the backends (sqlstore and
// pgstore): store-wide aggregates computed by the database in a few
// grouped queries, without reading every row into the caller. It is kept
// out of the Store interface, for inspection tools (the web console, its
// /metrics), so that other implementations need not provide it.
type Totaler interface {
	// Totals returns the aggregates of governed sessions and
	// conversations as of the store's clock (which decides whether an
	// active session is past its expiry), with the per-day figures of the
	// conversations last updated at or after req.Since.
	Totals(ctx context.Context, req TotalsRequest) (Totals, error)
}

// TotalsRequest selects the optional parts of Totals.
type TotalsRequest struct {
	// Since bounds the per-day conversation figures (Days); zero means
	// no per-day figures.
	Since time.Time
	// Top is how many agents (by calls made) and conversations (by cost,
	// and by last update) to return; 0 means 10, at most 100.
	Top int
	// DefaultTenantOnly, on a Store, counts the default tenant's rows
	// only: the rows the Store's own facets list (Governance().List,
	// Conversations().List), so that every figure equals the list it
	// summarises (the web console's operator pages ask for this). False
	// counts the rows of every tenant: the whole database. A tenant's
	// handle (TenantStore.Totals) counts its own rows whatever this says.
	DefaultTenantOnly bool
}

// Normalize validates r and applies the defaults.
func (r TotalsRequest) Normalize() (TotalsRequest, error) {
	switch {
	case r.Top < 0:
		return r, Invalid("top", "must not be negative")
	case r.Top == 0:
		r.Top = 10
	case r.Top > 100:
		return r, Invalid("top", "at most 100")
	}
	return r, nil
}

// Totals are store-wide aggregates (see Totaler), or the default
// tenant's (TotalsRequest.DefaultTenantOnly).
type Totals struct {
	Governed      GovernedTotals     `json:"governed"`
	Conversations ConversationTotals `json:"conversations"`
}

// GovernedTotals aggregate the governed sessions.
type GovernedTotals struct {
	Total int64 `json:"total"`
	// ByStatus counts the sessions by effective status (an active session
	// past its expiry counts as expired); every status has an entry.
	ByStatus   map[Status]int64 `json:"by_status"`
	CallsMade  int64            `json:"calls_made"`
	CallBudget int64            `json:"call_budget"`
	// TopAgents are the agents with the most calls made, most first (ties
	// by agent id), at most Top.
	TopAgents []AgentCalls `json:"top_agents"`
}

// AgentCalls is the number of calls made in an agent's governed sessions.
type AgentCalls struct {
	AgentID   string `json:"agent_id"`
	CallsMade int64  `json:"calls_made"`
}

// ConversationTotals aggregate the conversations.
type ConversationTotals struct {
	Total       int64                       `json:"total"`
	ByState     map[ConversationState]int64 `json:"by_state"`
	Messages    int64                       `json:"messages"`
	TotalTokens int64                       `json:"total_tokens"`
	TotalCost   float64                     `json:"total_cost"`
	// Days are the cost and tokens of the conversations last updated on
	// each UTC day from Since, oldest first (days without any left out).
	Days []DayTotals `json:"days"`
	// TopByCost and Recent are the costliest and the most recently
	// updated conversations, at most Top each (ties by id).
	TopByCost []ConversationSummary `json:"top_by_cost"`
	Recent    []ConversationSummary `json:"recent"`
}

// DayTotals are the cost and tokens of the conversations last updated on
// one UTC day.
type DayTotals struct {
	Day           time.Time `json:"day"` // midnight UTC
	Conversations int64     `json:"conversations"`
	TotalTokens   int64     `json:"total_tokens"`
	TotalCost     float64   `json:"total_cost"`
}
