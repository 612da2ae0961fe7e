package store

import "time"

// MaxRestoreSessions bounds the sessions of one restore request.
const MaxRestoreSessions = 100_000

// RestoreRequest puts governed sessions back exactly as they were exported:
// counters, rate window, status and times included (Create would start them
// afresh). Backends restore all of them in one transaction.
type RestoreRequest struct {
	// Sessions to insert; each must pass Session.ValidateStored.
	Sessions []Session
	// SkipExisting leaves sessions whose id exists untouched and restores
	// the others; without it an existing id fails the whole request with
	// ErrConflict.
	SkipExisting bool
}

// Validate checks every session of r. The error is an *InvalidInputError.
func (r RestoreRequest) Validate() error {
	if len(r.Sessions) > MaxRestoreSessions {
		return Invalid("sessions", "too many sessions in one restore")
	}
	seen := make(map[string]struct{}, len(r.Sessions))
	for i := range r.Sessions {
		if err := r.Sessions[i].ValidateStored(); err != nil {
			return err
		}
		if _, dup := seen[r.Sessions[i].ID]; dup {
			return Invalid("id", "appears twice in one restore")
		}
		seen[r.Sessions[i].ID] = struct{}{}
	}
	return nil
}

// ValidateStored checks that s is a session a store could hold: the fields
// Create validates, plus consistent counters, status and times (stored with
// millisecond precision; ExpiresAt = CreatedAt + TimeLimit). The error is an
// *InvalidInputError.
func (s *Session) ValidateStored() error {
	if s.ID == "" {
		return Invalid("id", "must not be empty")
	}
	if s.Sensitivity == "" {
		return Invalid("sensitivity", "must not be empty")
	}
	if s.RateWindow <= 0 {
		return Invalid("rate_window", "must be positive")
	}
	n, err := CreateRequest{
		ID:                    s.ID,
		AgentID:               s.AgentID,
		DelegationChain:       s.DelegationChain,
		DeclaredIntent:        s.DeclaredIntent,
		AuthorizedTools:       s.AuthorizedTools,
		AuthorizedCredentials: s.AuthorizedCredentials,
		TimeLimit:             s.TimeLimit,
		CallBudget:            s.CallBudget,
		RateLimit:             s.RateLimit,
		RateWindow:            s.RateWindow,
		Sensitivity:           s.Sensitivity,
	}.Normalize()
	if err != nil {
		return err
	}
	switch {
	case n.TimeLimit != s.TimeLimit:
		return Invalid("time_limit", "must be whole milliseconds, at least 1s")
	case n.RateWindow != s.RateWindow:
		return Invalid("rate_window", "must be whole milliseconds")
	case s.CallsMade < 0 || s.CallsMade > s.CallBudget:
		return Invalid("calls_made", "must be between 0 and call_budget")
	case s.RateWindowCalls < 0:
		return Invalid("rate_window_calls", "must not be negative")
	case !s.Status.Valid():
		return Invalid("status", "unknown status")
	case !millis(s.CreatedAt) || s.CreatedAt.IsZero():
		return Invalid("created_at", "must be a non-zero time in whole milliseconds")
	case !millis(s.RateWindowStart) || s.RateWindowStart.IsZero():
		return Invalid("rate_window_start", "must be a non-zero time in whole milliseconds")
	case !s.ExpiresAt.Equal(s.CreatedAt.Add(s.TimeLimit)):
		return Invalid("expires_at", "must be created_at + time_limit")
	}
	return nil
}

// millis reports whether t is a whole millisecond.
func millis(t time.Time) bool { return t.Equal(inMillis(t)) }
