package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
)

// Exit statuses. Every command exits with these: one status per kind of
// error, whichever command met it, so that scripts can branch on them.
// exitFor is the one place that maps an error to its status.
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
	// exitSpend (12, spend.go): a spend limit refused a reservation.
	exitTooMany   = 13
	exitNotStore  = 14
	exitStorage   = 15
	exitBusy      = 16
	exitFeedReset = 17
)

// exitTable documents the exit statuses ("sessionctl help exit"), in
// order of status.
var exitTable = []struct {
	code    int
	word    string // a few words, for the lists help texts quote (exitList)
	meaning string
}{
	{exitOK, "success", "success (use: the calls were allowed and counted)"},
	{exitError, "runtime error", "runtime error (missing database, I/O outside the store, unhealthy doctor, audit chain that does not verify)"},
	{exitUsage, "usage error", "usage error (unknown command or flag, missing argument, invalid input)"},
	{exitNotFound, "not found", "not found: no such session, conversation, run, agent session or tenant (refused (not-found))"},
	{exitAgent, "agent mismatch", "agent mismatch: the session belongs to another agent (refused (agent))"},
	{exitClosed, "closed", "closed: the session is already closed (refused (closed))"},
	{exitExpired, "expired", "expired: the session is past its time limit (refused (expired))"},
	{exitBudget, "budget exceeded", "budget: the calls would exceed the call budget (refused (budget))"},
	{exitTool, "tool not authorized", "tool: a tool is not authorized (refused (tool))"},
	{exitRate, "rate limited", "rate: the calls would exceed the rate limit (refused (rate))"},
	{exitConflict, "conflict", "conflict: the request id was used with other tools, the id exists, or a stale version (refused (conflict))"},
	{exitSchemaTooNew, "schema too new", "the database's schema is newer than this binary (use a newer sessionctl)"},
	{exitSpend, "spend limit exceeded", "spend: the reservation would exceed a spend limit (refused (spend))"},
	{exitTooMany, "too many sessions", "too many sessions: the agent's --max-active or the store's session cap is reached (refused (too-many))"},
	{exitNotStore, "not a session store", "not a session store: the file or schema is not a session store database"},
	{exitStorage, "storage failure", "storage failure: the database could not keep or read the data (disk full, read-only, damaged, I/O)"},
	{exitBusy, "busy", "busy: the database stayed locked or contended; the same command may succeed later"},
	{exitFeedReset, "feed reset", "feed reset: a followed stream was rewritten (reload it and follow again)"},
}

// exitList lists the statuses of codes as help texts quote them ("3 not
// found, 4 agent mismatch"), from exitTable.
func exitList(codes ...int) string {
	var parts []string
	for _, c := range codes {
		for _, e := range exitTable {
			if e.code == c {
				parts = append(parts, strconv.Itoa(c)+" "+e.word)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// helpExits are the statuses the help texts quote (package specs), from
// this table.
var helpExits = specs.Exits{OK: exitOK, NotFound: exitNotFound, Agent: exitAgent, Closed: exitClosed,
	Expired: exitExpired, Budget: exitBudget, Tool: exitTool, Rate: exitRate, Conflict: exitConflict,
	SchemaTooNew: exitSchemaTooNew, Spend: exitSpend, NotStore: exitNotStore, List: exitList}

// refusal describes a refused request: its exit status and a short kind
// word.
type refusal struct {
	code int
	kind string
}

// errorKinds maps error kinds to exit statuses and kind words, in the
// order they are tested: the first kind err matches wins (a feed reset
// matches ErrConflict too, so it comes first).
var errorKinds = []struct {
	target  error
	r       refusal
	refusal bool // a refusal of a request, printed as "refused (kind)" by use, reserve, settle, release
}{
	{store.ErrFeedReset, refusal{exitFeedReset, "feed-reset"}, false},
	{store.ErrSpendLimitExceeded, refusal{exitSpend, "spend"}, true},
	{store.ErrNotFound, refusal{exitNotFound, "not-found"}, true},
	{store.ErrAgentMismatch, refusal{exitAgent, "agent"}, true},
	{store.ErrClosed, refusal{exitClosed, "closed"}, true},
	{store.ErrExpired, refusal{exitExpired, "expired"}, true},
	{store.ErrBudgetExceeded, refusal{exitBudget, "budget"}, true},
	{store.ErrToolNotAuthorized, refusal{exitTool, "tool"}, true},
	{store.ErrRateLimited, refusal{exitRate, "rate"}, true},
	{store.ErrConflict, refusal{exitConflict, "conflict"}, true},
	{store.ErrTooManySessions, refusal{exitTooMany, "too-many"}, true},
	{store.ErrSchemaTooNew, refusal{exitSchemaTooNew, "schema-too-new"}, false},
	{store.ErrNotSessionStore, refusal{exitNotStore, "not-a-store"}, false},
	{store.ErrBusy, refusal{exitBusy, "busy"}, false},
	{store.ErrStorage, refusal{exitStorage, "storage"}, false},
}

// useRefusal maps a Use error to its refusal kind; ok is false for errors
// that are not refusals (storage failures, invalid input).
func useRefusal(err error) (r refusal, ok bool) {
	if !store.IsUseRefusal(err) {
		return refusal{}, false
	}
	for _, k := range errorKinds {
		if k.refusal && k.target != store.ErrSpendLimitExceeded && errors.Is(err, k.target) {
			return k.r, true
		}
	}
	return refusal{}, false
}

// exitFor is the exit status of a failed command, the one mapping from
// error kinds to exit statuses (see exitTable): invalid input is a usage
// error, each kind of errorKinds has its status, anything else is a
// runtime error.
func exitFor(err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var ue *usageError
	var he *helpUsageError
	if errors.Is(err, store.ErrInvalidInput) || errors.As(err, &ue) || errors.As(err, &he) {
		return exitUsage
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.target) {
			return k.r.code
		}
	}
	return exitError
}

// errHelp: the command printed its help as asked (--help); exit 0.
var errHelp = errors.New("help printed")

// exitStatus is the error of a command that has printed its own lines
// (refusals of use, reserve, settle, release; an unhealthy doctor): report
// prints nothing more and exits with the status.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// helpUsageError is a usage error of command name, found while parsing
// the command line or checking its arguments: report prints it with a
// pointer to the command's help (exit 2).
type helpUsageError struct{ name, msg string }

func (e *helpUsageError) Error() string { return e.msg }

// cmdError is an error reported under name, not the command's own name
// (see fail).
type cmdError struct {
	name string
	err  error
}

func (e *cmdError) Error() string { return e.err.Error() }
func (e *cmdError) Unwrap() error { return e.err }
