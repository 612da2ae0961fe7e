package store

import (
	"context"
	"slices"
	"time"
)

// Status is the lifecycle state of a governed session.
type Status string

// Governed session states.
const (
	StatusActive  Status = "active"
	StatusClosed  Status = "closed"
	StatusExpired Status = "expired"
)

// Valid reports whether s is one of the defined states.
func (s Status) Valid() bool {
	return s == StatusActive || s == StatusClosed || s == StatusExpired
}

// Sensitivity is the data-sensitivity ceiling of a governed session.
type Sensitivity string

// Sensitivity levels, from least to most sensitive.
const (
	SensitivityPublic       Sensitivity = "public"
	SensitivityInternal     Sensitivity = "internal"
	SensitivityConfidential Sensitivity = "confidential"
	SensitivityRestricted   Sensitivity = "restricted"
)

// Valid reports whether s is one of the defined levels.
func (s Sensitivity) Valid() bool {
	switch s {
	case SensitivityPublic, SensitivityInternal, SensitivityConfidential, SensitivityRestricted:
		return true
	}
	return false
}

// AnyTool in an allow-list authorizes every tool.
const AnyTool = "*"

// Defaults and bounds of governed sessions.
const (
	// MinTimeLimit is the shortest time limit: a shorter one (0 included)
	// is raised to it. A negative one is refused.
	MinTimeLimit = time.Second
	// DurationPrecision is the precision of the durations a backend
	// stores (time limits, rate windows), as of its times: a duration
	// that is not a whole multiple of it is refused (ErrInvalidInput with
	// InvalidInputError.Smallest set to it), never rounded.
	DurationPrecision = time.Millisecond
	// DefaultRateWindow is the rate window used when none is given.
	DefaultRateWindow = 60 * time.Second
	// MaxIDLength bounds session, agent and request ids (bytes).
	MaxIDLength = 256
	// MaxToolNameLength bounds tool and credential names (bytes).
	MaxToolNameLength = 128
	// MaxListItems bounds the tools, credentials and delegation chain entries
	// of one session, and the tools of one Use request.
	MaxListItems = 1024
	// MaxIntentLength bounds the declared intent (bytes).
	MaxIntentLength = 64 << 10
)

// Session is a governed task session: what one agent may do, and how much of
// it it has done.
type Session struct {
	ID                    string        `json:"id"`
	AgentID               string        `json:"agent_id"`
	DelegationChain       []string      `json:"delegation_chain"`
	DeclaredIntent        string        `json:"declared_intent"`
	AuthorizedTools       []string      `json:"authorized_tools"`
	AuthorizedCredentials []string      `json:"authorized_credentials"`
	TimeLimit             time.Duration `json:"time_limit"`
	CallBudget            int64         `json:"call_budget"`
	CallsMade             int64         `json:"calls_made"`
	RateLimit             int64         `json:"rate_limit"` // calls per window; 0 means unlimited
	RateWindow            time.Duration `json:"rate_window"`
	RateWindowStart       time.Time     `json:"rate_window_start"`
	RateWindowCalls       int64         `json:"rate_window_calls"`
	Sensitivity           Sensitivity   `json:"sensitivity"`
	Status                Status        `json:"status"`
	CreatedAt             time.Time     `json:"created_at"`
	ExpiresAt             time.Time     `json:"expires_at"`
}

// IsExpired reports whether the session is past its time limit at now.
func (s *Session) IsExpired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// IsActive reports whether the session is active and not past expiry at now.
func (s *Session) IsActive(now time.Time) bool {
	return s.Status == StatusActive && !s.IsExpired(now)
}

// EffectiveStatus is the status as seen at now: an active session past its
// expiry reads as expired even before a Use has marked it so durably.
func (s *Session) EffectiveStatus(now time.Time) Status {
	if s.Status == StatusActive && s.IsExpired(now) {
		return StatusExpired
	}
	return s.Status
}

// ToolAuthorized reports whether tool is in the allow-list (or "*" is).
func (s *Session) ToolAuthorized(tool string) bool {
	return slices.Contains(s.AuthorizedTools, AnyTool) || slices.Contains(s.AuthorizedTools, tool)
}

// CredentialAuthorized reports whether the session may resolve credential
// ref. An empty list authorizes nothing.
func (s *Session) CredentialAuthorized(ref string) bool {
	return slices.Contains(s.AuthorizedCredentials, ref)
}

// RemainingBudget is the number of calls still allowed.
func (s *Session) RemainingBudget() int64 { return s.CallBudget - s.CallsMade }

// windowCalls returns the calls counted in the rate window that applies at
// now: zero when the stored window has ended.
func (s *Session) windowCalls(now time.Time) (calls int64, newWindow bool) {
	if !now.Before(s.RateWindowStart.Add(s.RateWindow)) {
		return 0, true
	}
	return s.RateWindowCalls, false
}

// CheckUse decides a Use of tools at now against the session, applying the
// checks in the documented order: agent mismatch (when agentID is not
// empty), closed, expired, budget for the whole batch, every tool
// authorized, rate limit for the whole batch. It returns nil when the use is
// allowed. It does not change the session; see Apply.
func (s *Session) CheckUse(agentID string, tools []string, now time.Time) error {
	if agentID != "" && agentID != s.AgentID {
		return &AgentMismatchError{SessionID: s.ID, Expected: s.AgentID, Actual: agentID}
	}
	if s.Status == StatusClosed {
		return &ClosedError{SessionID: s.ID}
	}
	if s.Status == StatusExpired || s.IsExpired(now) {
		return &ExpiredError{SessionID: s.ID, ExpiresAt: s.ExpiresAt}
	}
	n := int64(len(tools))
	if s.CallsMade+n > s.CallBudget {
		return &BudgetError{SessionID: s.ID, Limit: s.CallBudget, Used: s.CallsMade, Requested: n}
	}
	for _, t := range tools {
		if !s.ToolAuthorized(t) {
			return &ToolError{SessionID: s.ID, Tool: t}
		}
	}
	if s.RateLimit > 0 {
		calls, _ := s.windowCalls(now)
		if calls+n > s.RateLimit {
			return &RateLimitError{SessionID: s.ID, Limit: s.RateLimit, Window: s.RateWindow, WindowCalls: calls, Requested: n}
		}
	}
	return nil
}

// Apply records n allowed calls at now: the budget counter and the rate
// window. A batch of zero calls changes nothing. Call it only after CheckUse
// returned nil.
func (s *Session) Apply(n int64, now time.Time) {
	if n == 0 {
		return
	}
	s.CallsMade += n
	if s.RateLimit > 0 {
		if _, fresh := s.windowCalls(now); fresh {
			s.RateWindowStart = now
			s.RateWindowCalls = n
		} else {
			s.RateWindowCalls += n
		}
	}
}

// CreateRequest describes a governed session to create.
type CreateRequest struct {
	// ID is optional; a random UUID is used when empty. An existing id is
	// ErrConflict.
	ID string
	// AgentID is the agent the session is bound to. Required; a name (see
	// ValidateName).
	AgentID string
	// DelegationChain is a snapshot of the delegation chain, outermost first.
	DelegationChain []string
	// DeclaredIntent is what the agent said it will do.
	DeclaredIntent string
	// AuthorizedTools is the allow-list; "*" authorizes any tool.
	AuthorizedTools []string
	// AuthorizedCredentials lists credential references the session may
	// resolve; empty denies all.
	AuthorizedCredentials []string
	// TimeLimit is how long the session lasts from its creation. It must
	// be a whole number of milliseconds (DurationPrecision) and not
	// negative; a limit under MinTimeLimit, 0 included, is raised to
	// MinTimeLimit (1s). Anything else is ErrInvalidInput.
	TimeLimit time.Duration
	// CallBudget is the number of tool calls allowed; 0 rejects the first.
	CallBudget int64
	// RateLimit is the number of calls per RateWindow; 0 means unlimited.
	RateLimit int64
	// RateWindow is the length of a rate window: DefaultRateWindow when
	// zero, else a positive whole number of milliseconds
	// (DurationPrecision; the smallest window is 1ms). A negative or finer
	// value is ErrInvalidInput.
	RateWindow time.Duration
	// Sensitivity defaults to SensitivityInternal when empty.
	Sensitivity Sensitivity
	// MaxActivePerAgent, when positive, creates the session only if the
	// agent has fewer active sessions, atomically; otherwise the call fails
	// with a *TooManySessionsError.
	MaxActivePerAgent int64
	// SpendLimits are the session's limits on tokens and money (see
	// Spend); the agent's own limits apply too. At most MaxSpendLimits,
	// no two with the same metric and window.
	SpendLimits []SpendLimit
}

// Normalize validates r and returns it with defaults applied (a time limit
// under MinTimeLimit raised to it, the default rate window and
// sensitivity). The error is an *InvalidInputError. The agent id and the
// delegation chain's entries must be names (see ValidateName).
func (r CreateRequest) Normalize() (CreateRequest, error) {
	if r.ID != "" {
		if err := ValidateID("id", r.ID); err != nil {
			return r, err
		}
	}
	if err := ValidateName("agent_id", r.AgentID); err != nil {
		return r, err
	}
	if r.TimeLimit < 0 {
		return r, Invalid("time_limit", "must not be negative")
	}
	if err := validPrecision("time_limit", r.TimeLimit); err != nil {
		return r, err
	}
	if r.CallBudget < 0 {
		return r, Invalid("call_budget", "must not be negative")
	}
	if r.RateLimit < 0 {
		return r, Invalid("rate_limit", "must not be negative")
	}
	if r.RateWindow < 0 {
		return r, Invalid("rate_window", "must not be negative")
	}
	if err := validPrecision("rate_window", r.RateWindow); err != nil {
		return r, err
	}
	if r.MaxActivePerAgent < 0 {
		return r, Invalid("max_active_per_agent", "must not be negative")
	}
	if len(r.DeclaredIntent) > MaxIntentLength {
		return r, Invalid("declared_intent", "too long")
	}
	if !validText(r.DeclaredIntent) {
		return r, Invalid("declared_intent", "must be valid UTF-8 without NUL")
	}
	if len(r.DelegationChain) > MaxListItems {
		return r, Invalid("delegation_chain", "too many entries")
	}
	for _, d := range r.DelegationChain {
		if err := ValidateName("delegation_chain", d); err != nil {
			return r, err
		}
	}
	if len(r.AuthorizedTools) > MaxListItems {
		return r, Invalid("authorized_tools", "too many entries")
	}
	for _, t := range r.AuthorizedTools {
		if t == AnyTool {
			continue
		}
		if err := ValidateToolName("authorized_tools", t); err != nil {
			return r, err
		}
	}
	if len(r.AuthorizedCredentials) > MaxListItems {
		return r, Invalid("authorized_credentials", "too many entries")
	}
	for _, c := range r.AuthorizedCredentials {
		if err := ValidateToolName("authorized_credentials", c); err != nil {
			return r, err
		}
	}
	if r.TimeLimit < MinTimeLimit {
		r.TimeLimit = MinTimeLimit
	}
	if r.RateWindow == 0 {
		r.RateWindow = DefaultRateWindow
	}
	if r.Sensitivity == "" {
		r.Sensitivity = SensitivityInternal
	}
	if !r.Sensitivity.Valid() {
		return r, Invalid("sensitivity", "unknown level")
	}
	limits, err := NormalizeSpendLimits("spend_limits", r.SpendLimits)
	if err != nil {
		return r, err
	}
	r.SpendLimits = limits
	r.DelegationChain = nonNil(r.DelegationChain)
	r.AuthorizedTools = nonNil(r.AuthorizedTools)
	r.AuthorizedCredentials = nonNil(r.AuthorizedCredentials)
	return r, nil
}

// NewSession builds the session a valid, normalized request creates at now.
func (r CreateRequest) NewSession(id string, now time.Time) Session {
	now = inMillis(now)
	return Session{
		ID:                    id,
		AgentID:               r.AgentID,
		DelegationChain:       slices.Clone(r.DelegationChain),
		DeclaredIntent:        r.DeclaredIntent,
		AuthorizedTools:       slices.Clone(r.AuthorizedTools),
		AuthorizedCredentials: slices.Clone(r.AuthorizedCredentials),
		TimeLimit:             r.TimeLimit,
		CallBudget:            r.CallBudget,
		RateLimit:             r.RateLimit,
		RateWindow:            r.RateWindow,
		RateWindowStart:       now,
		Sensitivity:           r.Sensitivity,
		Status:                StatusActive,
		CreatedAt:             now,
		ExpiresAt:             now.Add(r.TimeLimit),
	}
}

// UseRequest asks to record one call per tool against a governed session,
// all or nothing.
type UseRequest struct {
	// SessionID is the session to charge. Required.
	SessionID string
	// AgentID, when not empty, must be the session's agent. It is a name
	// (see ValidateName): compared exactly, never trimmed.
	AgentID string
	// Tools holds one entry per call; an empty batch checks the session and
	// consumes nothing.
	Tools []string
	// RequestID, when not empty, makes the call idempotent per session: a
	// retry with the same id consumes nothing more and returns the first
	// outcome exactly: the same refusal (with its details as they were),
	// or for an allowed call the session as that call returned it
	// (CallsMade, the rate window and Status active as they were then,
	// not as they are now, even after a Close or the expiry). The same id
	// with different tools is ErrConflict; another agent's AgentID is
	// ErrAgentMismatch. The record goes with the session (Cleanup). It is a
	// name (see ValidateName).
	RequestID string
}

// Validate checks the shape of r. The error is an *InvalidInputError.
func (r UseRequest) Validate() error {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return err
	}
	if r.AgentID != "" {
		if err := ValidateName("agent_id", r.AgentID); err != nil {
			return err
		}
	}
	if r.RequestID != "" {
		if err := ValidateName("request_id", r.RequestID); err != nil {
			return err
		}
	}
	if len(r.Tools) > MaxListItems {
		return Invalid("tools", "too many entries")
	}
	for _, t := range r.Tools {
		if err := ValidateToolName("tools", t); err != nil {
			return err
		}
	}
	return nil
}

// ListFilter selects governed sessions. The zero value lists everything.
type ListFilter struct {
	// AgentID restricts the list to one agent.
	AgentID string
	// Status restricts the list to one effective status (see
	// Session.EffectiveStatus).
	Status Status
	// After is the id of the last session of the previous page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Paging bounds.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Normalize validates f and applies the default limit.
func (f ListFilter) Normalize() (ListFilter, error) {
	if f.AgentID != "" {
		if err := ValidateName("agent_id", f.AgentID); err != nil {
			return f, err
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		return f, Invalid("status", "unknown status")
	}
	if f.After != "" {
		if err := ValidateID("after", f.After); err != nil {
			return f, err
		}
	}
	if f.Limit < 0 {
		return f, Invalid("limit", "must not be negative")
	}
	if f.Limit == 0 {
		f.Limit = DefaultPageSize
	}
	if f.Limit > MaxPageSize {
		f.Limit = MaxPageSize
	}
	return f, nil
}

// Page is one page of a listing, in the listing's order. Next resumes the
// listing after the page's last item: pass it as the After (or Cursor) of
// the request for the following page. It is empty on the last page.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// Governance is the governed-session facet of a Store. Every method is safe
// for concurrent use, also by several processes sharing one database.
type Governance interface {
	// Create creates a governed session. With MaxActivePerAgent set, the
	// count and the insert are one atomic step.
	Create(ctx context.Context, req CreateRequest) (Session, error)
	// Use checks and records one call per tool in one transaction and
	// returns the updated session.
	Use(ctx context.Context, req UseRequest) (Session, error)
	// Close closes a session; closing it twice is ErrClosed.
	Close(ctx context.Context, id string) (Session, error)
	// Get returns one session.
	Get(ctx context.Context, id string) (Session, error)
	// List returns a page of sessions ordered by id.
	List(ctx context.Context, f ListFilter) (Page[Session], error)
	// CountActive counts the agent's active sessions.
	CountActive(ctx context.Context, agentID string) (int64, error)
	// CloseAllForAgent closes every active session of the agent and returns
	// how many it closed.
	CloseAllForAgent(ctx context.Context, agentID string) (int64, error)
	// Cleanup deletes expired and closed sessions and returns how many.
	Cleanup(ctx context.Context) (int64, error)
	// Restore inserts sessions exactly as given (counters, rate window,
	// status, times) in one transaction and returns how many it inserted:
	// the import side of an export. An existing id fails the whole
	// request with ErrConflict unless req.SkipExisting; invalid sessions
	// fail it with ErrInvalidInput. Either way nothing is written.
	Restore(ctx context.Context, req RestoreRequest) (int64, error)
}

// validPrecision refuses a duration the store cannot keep exactly.
func validPrecision(field string, d time.Duration) error {
	if d%DurationPrecision != 0 {
		return &InvalidInputError{Field: field, Reason: "must be a whole number of milliseconds (smallest 1ms)",
			Smallest: DurationPrecision}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
