package main

import (
	"errors"

	"github.com/agentstore/sessionstore/store"
)

// Exit statuses. 0–2 and 11 apply to every command; 3–10 are the refusals
// of "sessionctl use", one per kind, so that scripts can branch on them.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitAgent    = 4
	exitClosed   = 5
	exitExpired  = 6
	exitBudget   = 7
	exitTool     = 8
	exitRate     = 9
	exitConflict = 10
	// exitSchemaTooNew: the database was migrated by a newer binary.
	exitSchemaTooNew = 11
)

// exitTable documents the exit statuses ("sessionctl help exit").
var exitTable = []struct {
	code    int
	meaning string
}{
	{exitOK, "success (use: the calls were allowed and counted)"},
	{exitError, "runtime error (missing or damaged database, I/O, unhealthy doctor)"},
	{exitUsage, "usage error (unknown command or flag, missing argument, invalid input)"},
	{exitNotFound, "use refused (not-found): no such session"},
	{exitAgent, "use refused (agent): the session belongs to another agent"},
	{exitClosed, "use refused (closed): the session is closed"},
	{exitExpired, "use refused (expired): the session is past its time limit"},
	{exitBudget, "use refused (budget): the calls would exceed the call budget"},
	{exitTool, "use refused (tool): a tool is not authorized"},
	{exitRate, "use refused (rate): the calls would exceed the rate limit"},
	{exitConflict, "use refused (conflict): the request id was used with other tools"},
	{exitSchemaTooNew, "the database's schema is newer than this binary (use a newer sessionctl)"},
}

// refusal describes a refused Use: its exit status and a short kind word.
type refusal struct {
	code int
	kind string
}

// useRefusal maps a Use error to its refusal kind; ok is false for errors
// that are not refusals (storage failures, invalid input).
func useRefusal(err error) (r refusal, ok bool) {
	for _, m := range []struct {
		target error
		r      refusal
	}{
		{store.ErrNotFound, refusal{exitNotFound, "not-found"}},
		{store.ErrAgentMismatch, refusal{exitAgent, "agent"}},
		{store.ErrClosed, refusal{exitClosed, "closed"}},
		{store.ErrExpired, refusal{exitExpired, "expired"}},
		{store.ErrBudgetExceeded, refusal{exitBudget, "budget"}},
		{store.ErrToolNotAuthorized, refusal{exitTool, "tool"}},
		{store.ErrRateLimited, refusal{exitRate, "rate"}},
		{store.ErrConflict, refusal{exitConflict, "conflict"}},
	} {
		if errors.Is(err, m.target) {
			return m.r, true
		}
	}
	return refusal{}, false
}

// exitFor is the exit status of a failed command: invalid input is a usage
// error, a schema newer than this binary has its own status, anything else
// is a runtime error.
func exitFor(err error) int {
	switch {
	case errors.Is(err, store.ErrInvalidInput):
		return exitUsage
	case errors.Is(err, store.ErrSchemaTooNew):
		return exitSchemaTooNew
	}
	return exitError
}
