package store

import "context"

// Counter is implemented by the stores of the backends (sqlstore and
// pgstore): how many items each facet holds, counted by the database with
// aggregate queries in one read transaction, so that the counts are those
// of one instant and no row is read into the caller. Like Totaler it is
// kept out of the Store interface, for maintenance tools (sessionctl
// stats), so that other implementations need not provide it. Under a
// context of ReadSnapshot the counts are those of that snapshot.
type Counter interface {
	// Counts returns the counts of every facet as of the store's clock,
	// which decides whether an active governed session is past its
	// expiry.
	Counts(ctx context.Context) (Counts, error)
}

// Counts are the sizes of every facet of a store (see Counter).
type Counts struct {
	Governed      GovernedCounts     `json:"governed"`
	Runtime       RuntimeCounts      `json:"runtime"`
	Conversations ConversationCounts `json:"conversations"`
	AgentSessions AgentSessionCounts `json:"agent_sessions"`
	Audit         AuditCounts        `json:"audit"`
}

// GovernedCounts count the governed sessions.
type GovernedCounts struct {
	Total int64 `json:"total"`
	// ByStatus counts the sessions by effective status (an active session
	// past its expiry counts as expired); every status has an entry.
	ByStatus map[Status]int64 `json:"by_status"`
}

// RuntimeCounts count the runtime sessions and their uploads.
type RuntimeCounts struct {
	Total int64 `json:"total"`
	// ByAgent counts the sessions by agent alias (aliases without
	// sessions left out), as Runtime.CountByAgent does.
	ByAgent map[string]int64 `json:"by_agent"`
	// RunningTurns counts the sessions whose turn is running, stale
	// turns (whose lease lapsed) included.
	RunningTurns int64 `json:"running_turns"`
	// Uploads counts the upload entries of every session, and
	// UploadBytes adds up their sizes: content that several entries
	// share is counted once per entry.
	Uploads     int64 `json:"uploads"`
	UploadBytes int64 `json:"upload_bytes"`
}

// ConversationCounts count the conversations and what they recorded.
type ConversationCounts struct {
	Total int64 `json:"total"`
	// ByState counts the conversations by state; states without any
	// are left out.
	ByState map[ConversationState]int64 `json:"by_state"`
	// Messages, TotalTokens and TotalCost add up the conversations'
	// message counts, total token usage and cost.
	Messages    int64   `json:"messages"`
	TotalTokens int64   `json:"total_tokens"`
	TotalCost   float64 `json:"total_cost"`
}

// AgentSessionCounts count the agent sessions, their scopes and state.
type AgentSessionCounts struct {
	Total int64 `json:"total"`
	// Apps counts the applications ListApps lists (with a session, app
	// state or user state); Users counts the users ListUsers lists in
	// each of them (with a session or user state), added up.
	Apps  int64 `json:"apps"`
	Users int64 `json:"users"`
	// Events adds up the sessions' event counts.
	Events int64 `json:"events"`
	// AppStateKeys, UserStateKeys and SessionStateKeys count the keys
	// of every scope of each kind.
	AppStateKeys     int64 `json:"app_state_keys"`
	UserStateKeys    int64 `json:"user_state_keys"`
	SessionStateKeys int64 `json:"session_state_keys"`
}

// AuditCounts count the audit trail's chains: the agents' own chains and
// the chains of the governed sessions there (a removed session's chain is
// not counted).
type AuditCounts struct {
	Chains int64 `json:"chains"`
	// EventsAppended adds up the chains' head sequence numbers: every
	// event ever appended, the pruned ones included.
	EventsAppended int64 `json:"events_appended"`
}
