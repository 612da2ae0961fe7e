package store

import (
	"context"
	"math"
	"time"
)

// ChatMode is the kind of conversation a runtime session carries, for
// example "chat" or "acp" (a coding session). Modes are short lowercase
// tokens; sessions of different modes never evict each other.
type ChatMode string

// Chat modes used by agent runtimes. Other tokens are accepted as well (see
// ChatMode.Validate).
const (
	ChatModeChat ChatMode = "chat"
	ChatModeACP  ChatMode = "acp"
)

// Bounds of runtime sessions.
const (
	// MaxChatModeLength bounds a chat mode token (bytes).
	MaxChatModeLength = 32
	// MaxPathLength bounds workspace directories and upload paths (bytes).
	MaxPathLength = 4096
	// MaxTemperature is the highest sampling temperature an override may
	// set; the lowest is 0.
	MaxTemperature = 2.0
)

// Validate checks that m is 1 to MaxChatModeLength bytes of lowercase ASCII
// letters, digits, '_' and '-'.
func (m ChatMode) Validate() error {
	if m == "" {
		return Invalid("chat_mode", "must not be empty")
	}
	if len(m) > MaxChatModeLength {
		return Invalid("chat_mode", "too long")
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Invalid("chat_mode", "has a character outside [a-z0-9_-]")
		}
	}
	return nil
}

// Overrides are a runtime session's model settings. A nil field means "use
// the configured default". Overrides live as long as the session.
type Overrides struct {
	// Model is the model name, for example "claude-opus-4-5".
	Model *string `json:"model,omitempty"`
	// Provider is the model provider alias, for example "ollama.default".
	Provider *string `json:"model_provider,omitempty"`
	// Temperature is the sampling temperature, 0 to MaxTemperature.
	Temperature *float64 `json:"temperature,omitempty"`
}

// Validate checks the fields that are set: names are non-empty opaque
// strings (see ValidateID), the temperature is finite and within
// [0, MaxTemperature].
func (o Overrides) Validate() error {
	if o.Model != nil {
		if err := ValidateID("model", *o.Model); err != nil {
			return err
		}
	}
	if o.Provider != nil {
		if err := ValidateID("model_provider", *o.Provider); err != nil {
			return err
		}
	}
	if o.Temperature != nil {
		t := *o.Temperature
		if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 || t > MaxTemperature {
			return Invalid("temperature", "must be a number from 0 to 2")
		}
	}
	return nil
}

// Merge applies patch to o and returns the result, with the runtime's
// rules: a field the patch leaves nil keeps its value; setting a provider
// without a model clears the model, so that a provider switch never carries
// the previous provider's model along. o and patch are not modified.
func (o Overrides) Merge(patch Overrides) Overrides {
	out := Overrides{Model: clonePtr(o.Model), Provider: clonePtr(o.Provider), Temperature: clonePtr(o.Temperature)}
	if patch.Model != nil {
		out.Model = clonePtr(patch.Model)
	}
	if patch.Provider != nil {
		out.Provider = clonePtr(patch.Provider)
		if patch.Model == nil {
			out.Model = nil
		}
	}
	if patch.Temperature != nil {
		out.Temperature = clonePtr(patch.Temperature)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// RuntimeSession is what an agent runtime keeps about one live session:
// where it works, which agent serves it, who owns it, its model overrides
// and the state of its current turn.
type RuntimeSession struct {
	ID           string    `json:"id"`
	AgentAlias   string    `json:"agent_alias"`
	WorkspaceDir string    `json:"workspace_dir"`
	ChatMode     ChatMode  `json:"chat_mode"`
	OwnerID      string    `json:"owner_id,omitempty"` // empty: unowned
	Overrides    Overrides `json:"overrides"`
	CreatedAt    time.Time `json:"created_at"`
	LastActive   time.Time `json:"last_active"`
	Turn         TurnState `json:"turn"`
	// DataKeyID is the id of the session's data key in the store's
	// keyring ("" when the session is not encrypted); export uses it to
	// seal the session. It is not part of the session's JSON.
	DataKeyID string `json:"-"`
}

// NewRuntimeSession is the request to insert a runtime session.
type NewRuntimeSession struct {
	// ID is the session id; empty means a new random id.
	ID string
	// AgentAlias names the agent serving the session (required).
	AgentAlias string
	// WorkspaceDir is the session's working directory (required). It is
	// data for the runtime; the store never touches the file system.
	WorkspaceDir string
	// ChatMode is the session's mode (required).
	ChatMode ChatMode
	// OwnerID binds the session to a client (for example a TUI); empty
	// means unowned.
	OwnerID string
}

// Validate checks the request.
func (r NewRuntimeSession) Validate() error {
	if r.ID != "" {
		if err := ValidateID("id", r.ID); err != nil {
			return err
		}
	}
	if err := ValidateID("agent_alias", r.AgentAlias); err != nil {
		return err
	}
	if err := ValidatePath("workspace_dir", r.WorkspaceDir); err != nil {
		return err
	}
	if err := r.ChatMode.Validate(); err != nil {
		return err
	}
	if r.OwnerID != "" {
		if err := ValidateID("owner_id", r.OwnerID); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePath checks a path-like string that the store keeps as data:
// 1 to MaxPathLength bytes of valid UTF-8 without NUL.
func ValidatePath(field, p string) error {
	switch {
	case p == "":
		return Invalid(field, "must not be empty")
	case len(p) > MaxPathLength:
		return Invalid(field, "too long")
	case !validText(p):
		return Invalid(field, "must be valid UTF-8 without NUL")
	}
	return nil
}

// ListIDsRequest pages through runtime session ids in id order.
type ListIDsRequest struct {
	// After is the last id of the previous page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListIDsRequest) Normalize() (ListIDsRequest, error) {
	f, err := ListFilter{After: r.After, Limit: r.Limit}.Normalize()
	return ListIDsRequest{After: f.After, Limit: f.Limit}, err
}

// EvictRequest names the sessions a client abandons by starting another
// one: every session of OwnerID in ChatMode except ExceptID.
type EvictRequest struct {
	OwnerID  string
	ChatMode ChatMode
	// ExceptID is the caller's own (new) session; it is never evicted.
	ExceptID string
}

// Validate checks the request. OwnerID is required: unowned sessions are
// never evicted.
func (r EvictRequest) Validate() error {
	if err := ValidateID("owner_id", r.OwnerID); err != nil {
		return err
	}
	if err := r.ChatMode.Validate(); err != nil {
		return err
	}
	if r.ExceptID != "" {
		return ValidateID("except_id", r.ExceptID)
	}
	return nil
}

// Evicted names a session removed by EvictSameModeSiblings.
type Evicted struct {
	ID         string `json:"id"`
	AgentAlias string `json:"agent_alias"`
}

// Runtime is the runtime-bookkeeping facet of a Store: the sessions an
// agent runtime serves, their overrides, uploads and turns. Sessions stay
// until they are removed (there is no idle expiry). Every method is safe
// for concurrent use, also by several processes sharing one database.
type Runtime interface {
	// Insert adds a session. It fails with ErrTooManySessions when the
	// store's global session cap is reached (the count and the insert are
	// one atomic step) and with ErrConflict when the id exists.
	Insert(ctx context.Context, req NewRuntimeSession) (RuntimeSession, error)
	// Get returns one session, ErrNotFound if there is none.
	Get(ctx context.Context, id string) (RuntimeSession, error)
	// Touch sets the session's last-active time to now (it never moves
	// backwards).
	Touch(ctx context.Context, id string) error
	// SetOverrides merges patch into the session's overrides (see
	// Overrides.Merge) and returns the result.
	SetOverrides(ctx context.Context, id string, patch Overrides) (Overrides, error)
	// ListIDs returns a page of session ids in id order.
	ListIDs(ctx context.Context, req ListIDsRequest) (Page[string], error)
	// Count returns the number of sessions.
	Count(ctx context.Context) (int64, error)
	// CountByAgent returns the number of sessions per agent alias.
	CountByAgent(ctx context.Context) (map[string]int64, error)
	// HistoryLen returns the length of the session's message history, kept
	// in the conversation of the same id (see Conversations): the position
	// after its last message, which is the number of messages unless the
	// oldest were trimmed; 0 when there is no conversation. ErrNotFound if
	// the runtime session does not exist.
	HistoryLen(ctx context.Context, id string) (int64, error)
	// HistorySlice returns up to limit messages of that history from
	// position from on, oldest first (limit 0 means DefaultPageSize, at
	// most MaxMessagePage). It saturates like the runtime it serves: a from
	// at or past the end returns no messages rather than an error, so a
	// poller whose index a trim overtook simply gets what is left.
	HistorySlice(ctx context.Context, id string, from int64, limit int) ([]Message, error)
	// EvictSameModeSiblings removes the owner's other sessions of the same
	// chat mode that have no live turn (none running, or a stale one: see
	// TurnState.Stale), and returns them in id order.
	// Their uploads go with them; their conversations are kept so that they
	// can be loaded again.
	EvictSameModeSiblings(ctx context.Context, req EvictRequest) ([]Evicted, error)
	// Remove deletes the session with its uploads and its conversation of
	// the same id, in one transaction. A running turn is cancelled with
	// CauseSessionRemoved (recorded first). It reports whether the session
	// existed.
	Remove(ctx context.Context, id string) (bool, error)
	// Kill is Remove on behalf of an administrator: the cause recorded for
	// a running turn is CauseAdminKill.
	Kill(ctx context.Context, id string) (bool, error)

	Uploads
	Turns
}
