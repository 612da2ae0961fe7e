package view

import (
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// Conversation is a conversation's summary: its cost exact, from the
// float the store keeps rounded to micro-units, with its currency
// ("0.0432 USD", and in micro-units), where store.ConversationSummary's
// JSON has the float (a sum of settled costs leaves 0.039000000000000004).
type Conversation struct {
	ID              string           `json:"id"`
	Name            string           `json:"name"`
	Workspace       string           `json:"workspace"`
	State           string           `json:"state"`
	ParentID        string           `json:"parent_id"`
	ModelName       string           `json:"model_name"`
	MessageCount    int64            `json:"message_count"`
	TotalUsage      store.TokenUsage `json:"total_usage"`
	TotalCost       string           `json:"total_cost"`
	TotalCostMicros int64            `json:"total_cost_micros"`
	Version         int64            `json:"version"`
	CreatedAt       string           `json:"created_at"`
	UpdatedAt       string           `json:"updated_at"`
}

// NewConversation returns c's view.
func NewConversation(c store.ConversationSummary) Conversation {
	micros := humanize.MicrosOf(c.TotalCost)
	return Conversation{
		ID:              c.ID,
		Name:            c.Name,
		Workspace:       c.Workspace,
		State:           string(c.State),
		ParentID:        c.ParentID,
		ModelName:       c.ModelName,
		MessageCount:    c.MessageCount,
		TotalUsage:      c.TotalUsage,
		TotalCost:       humanize.Money(micros, "USD"),
		TotalCostMicros: micros,
		Version:         c.Version,
		CreatedAt:       humanize.Time(c.CreatedAt),
		UpdatedAt:       humanize.Time(c.UpdatedAt),
	}
}

// RuntimeSession is a runtime session with its current turn.
type RuntimeSession struct {
	ID           string          `json:"id"`
	AgentAlias   string          `json:"agent_alias"`
	WorkspaceDir string          `json:"workspace_dir"`
	ChatMode     string          `json:"chat_mode"`
	OwnerID      string          `json:"owner_id"`
	Overrides    store.Overrides `json:"overrides"`
	CreatedAt    string          `json:"created_at"`
	LastActive   string          `json:"last_active"`
	Turn         Turn            `json:"turn"`
}

// Turn is a runtime session's current turn. Stale: the turn runs, but
// its lease lapsed (the process that began it stopped renewing it).
// Times that are not there are absent, not "": StartedAt before the
// session's first turn, LeaseExpiresAt when no turn runs.
type Turn struct {
	Generation     uint64 `json:"generation"`
	Running        bool   `json:"running"`
	Owner          string `json:"owner"`
	StartedAt      string `json:"started_at,omitempty"`
	CancelCause    string `json:"cancel_cause"`
	Stale          bool   `json:"stale"`
	LeaseExpiresAt string `json:"lease_expires_at,omitempty"`
}

// NewRuntimeSession returns s's view.
func NewRuntimeSession(s store.RuntimeSession) RuntimeSession {
	return RuntimeSession{
		ID:           s.ID,
		AgentAlias:   s.AgentAlias,
		WorkspaceDir: s.WorkspaceDir,
		ChatMode:     string(s.ChatMode),
		OwnerID:      s.OwnerID,
		Overrides:    s.Overrides,
		CreatedAt:    humanize.Time(s.CreatedAt),
		LastActive:   humanize.Time(s.LastActive),
		Turn: Turn{
			Generation:     s.Turn.Generation,
			Running:        s.Turn.Running,
			Owner:          s.Turn.Owner,
			StartedAt:      humanize.Time(s.Turn.StartedAt),
			CancelCause:    string(s.Turn.CancelCause),
			Stale:          s.Turn.Stale,
			LeaseExpiresAt: humanize.Time(s.Turn.LeaseExpiresAt),
		},
	}
}

// AgentSession is an agent session without its state and events: its
// key, version, event count and the number of its session state keys.
type AgentSession struct {
	App        string `json:"app"`
	User       string `json:"user"`
	Session    string `json:"session"`
	Version    int64  `json:"version"`
	EventCount int64  `json:"event_count"`
	StateKeys  int    `json:"session_state_keys"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
}

// NewAgentSession returns s's view.
func NewAgentSession(s store.AgentSession) AgentSession {
	return AgentSession{App: s.Key.App, User: s.Key.User, Session: s.Key.Session, Version: s.Version,
		EventCount: s.EventCount, StateKeys: len(s.State.Session),
		CreatedAt: humanize.Time(s.CreatedAt), UpdatedAt: humanize.Time(s.UpdatedAt)}
}

// Reservation is a spend reservation, with its amounts also as text
// (AmountText; ActualText once settled).
type Reservation struct {
	SessionID  string            `json:"session_id"`
	ID         string            `json:"id"`
	AgentID    string            `json:"agent_id"`
	Status     string            `json:"status"`
	Amount     store.SpendAmount `json:"amount"`
	Currency   string            `json:"currency,omitempty"`
	Actual     store.SpendAmount `json:"actual"`
	CreatedAt  string            `json:"created_at"`
	ExpiresAt  string            `json:"expires_at"`
	ClosedAt   string            `json:"closed_at,omitempty"`
	AmountText string            `json:"amount_text"`
	ActualText string            `json:"actual_text,omitempty"`
}

// NewReservation returns r's view.
func NewReservation(r store.Reservation) Reservation {
	v := Reservation{SessionID: r.SessionID, ID: r.ID, AgentID: r.AgentID, Status: string(r.Status),
		Amount: r.Amount, Currency: r.Currency, Actual: r.Actual, CreatedAt: humanize.Time(r.CreatedAt),
		ExpiresAt: humanize.Time(r.ExpiresAt), ClosedAt: humanize.Time(r.ClosedAt), AmountText: AmountText(r.Amount, r.Currency)}
	if r.Status == store.ReservationSettled {
		v.ActualText = AmountText(r.Actual, r.Currency)
	}
	return v
}

// AmountText describes an amount of spend in currency cur: "1000 in +
// 500 out tokens, 0.25 USD", "nothing" for none.
func AmountText(a store.SpendAmount, cur string) string {
	var parts []string
	if a.InputTokens != 0 || a.OutputTokens != 0 {
		parts = append(parts, fmt.Sprintf("%d in + %d out tokens", a.InputTokens, a.OutputTokens))
	}
	if a.CostMicros != 0 || cur != "" {
		parts = append(parts, humanize.Money(a.CostMicros, cur))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
