package specs

import (
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/store"
)

// Create is the spec of sessionctl create.
var Create = cmdspec.Spec{
	Name: "create",
	About: `Creates a governed session and prints its id (the whole session with --json).
The session allows --budget tool calls of the --tool names ("*" for any
tool) until --time-limit has passed, at most --rate-limit calls per
--rate-window when a rate limit is given. --max-active creates the session
only if the agent has fewer active sessions, atomically. --limit sets a
spend limit of the session, METRIC=AMOUNT[/WINDOW] (see "sessionctl
limits", which sets an agent's own). Creates the database file when it
does not exist.`,
	Examples: []string{
		`id=$(sessionctl create --agent agent-42 --tool read_file --tool list_dir --budget 100 --time-limit 1h)`,
		`sessionctl create --id task-7 --agent a1 --tool '*' --budget 10 --rate-limit 5 --rate-window 1m --json`,
		`sessionctl create --agent a1 --tool '*' --budget 50 --limit cost=2.50USD --limit tokens=200000/hour`,
	},
	Values: map[string][]string{"--sensitivity": {string(store.SensitivityPublic), string(store.SensitivityInternal),
		string(store.SensitivityConfidential), string(store.SensitivityRestricted)}},
}

// Use is the spec of sessionctl use; x are the exit statuses its help
// quotes.
func Use(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "use",
		Args: "ID",
		About: `Records one call per --tool against a governed session, all or nothing, in
one transaction: checks, in order, that the session exists, belongs to
--agent (when given), is not closed, has not expired, has budget for every
call, authorizes every tool and is within its rate limit. Several use
processes may run at once on one database: the budget stays exact.

` + clitext.Wrap(fmt.Sprintf(`Exit status %d means the calls were allowed and counted. A refusal exits with its own status (see "sessionctl help exit"): %s (the request id reused with different tools).`,
			x.OK, x.List(x.NotFound, x.Agent, x.Closed, x.Expired, x.Budget, x.Tool, x.Rate, x.Conflict))),
		Examples: []string{
			"sessionctl use task-7 --agent agent-42 --tool read_file --tool list_dir",
			`sessionctl use "$id" --agent a1 --tool search --request-id call-17 || echo "refused: $?"`,
		},
	}
}

// Close is the spec of sessionctl close; x are the exit statuses its help
// quotes.
func Close(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "close",
		Args: "ID [ID...]",
		About: fmt.Sprintf(`Closes governed sessions: every later use is refused with status %d. Closing a
session that is already closed is an error (exit status %[1]d), a missing one
exit status %d; the other ids are still closed, and the exit status is the
highest of them.`, x.Closed, x.NotFound),
		Examples: []string{
			"sessionctl close task-7",
			"sessionctl list --agent a1 --status active --json | jq -r '.items[].id' | xargs sessionctl close",
		},
	}
}

// CloseAgent is the spec of sessionctl close-agent.
var CloseAgent = cmdspec.Spec{
	Name: "close-agent",
	Args: "AGENT",
	About: `Closes every active governed session of one agent, for example when its
credentials are revoked, and prints how many it closed.`,
	Examples: []string{"sessionctl close-agent agent-42"},
}

// Delete is the spec of sessionctl delete.
var Delete = cmdspec.Spec{
	Name: "delete",
	Args: "ID",
	About: `Deletes the runtime session and the conversation of one id, with everything
they own: the runtime session's uploads and turn (a running turn is
cancelled with the cause session_removed), the conversation's messages,
cost records, artifacts, trace events, runs and verification reports. One
transaction per facet; nothing is left half deleted. --facet conversations
deletes only the conversation (the runtime session stays); --facet runtime
deletes the runtime session, which takes its conversation with it.

A governed session is not deleted here: close it, and cleanup removes it
(cleanup --dry-run lists what it would remove). Agent sessions are deleted
with "sessionctl agents delete APP USER SESSION".

delete names what it will remove and asks on a terminal; when stdin is
not a terminal it needs --yes (without it: exit 2). --dry-run only prints
what would be deleted.`,
	Examples: []string{
		"sessionctl delete conv-1",
		"sessionctl delete conv-1 --facet conversations --yes",
		"sessionctl delete rt-7 --dry-run --json",
	},
	Values: map[string][]string{"--facet": {FacetConversations, FacetRuntime}},
}

// Cleanup is the spec of sessionctl cleanup.
var Cleanup = cmdspec.Spec{
	Name: "cleanup",
	About: `Deletes governed sessions that are closed or past their time limit (one
sweep with that rule, see sessionctl sweep; held sessions are kept), then
checkpoints the WAL into the database file and truncates it. With --vacuum
the database file is also rewritten without its free pages, so that it
shrinks on disk (this holds the write lock while it runs). Before it
changes anything, cleanup checks the database (SQLite's quick_check, and
that every stored document decodes, as doctor does) and refuses to
rewrite a damaged one. On PostgreSQL
only the sessions are deleted: the server manages its WAL and reclaims
space with autovacuum, and --vacuum is refused. --dry-run lists the
sessions cleanup would remove and changes nothing.`,
	Examples: []string{
		"sessionctl cleanup --dry-run",
		"sessionctl cleanup",
		"sessionctl cleanup --vacuum --json",
	},
}

// Reserve is the spec of sessionctl reserve; x are the exit statuses its help
// quotes.
func Reserve(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "reserve",
		Args: "SESSION",
		About: `Reserves an upper bound of usage on a governed session before a model call:
checks the session (as use does) and every spend limit of the session and of
its agent, and counts the reservation against all of them in one
transaction. Prints the reservation id (the whole reservation with --json).
Settle it after the call ("sessionctl settle"), or release it ("sessionctl
release"); one that is neither by --ttl is released when it lapses.

` + clitext.Wrap(fmt.Sprintf(`A --request-id makes a retry return the first outcome. A refusal by a spend limit exits %d; the session's refusals exit as use's (%s: the request id reused with another amount).`,
			x.Spend, x.List(x.NotFound, x.Agent, x.Closed, x.Expired, x.Conflict))),
		Examples: []string{
			`sessionctl reserve task-7 --agent a1 --input-tokens 8000 --output-tokens 2000 --cost 0.12USD --request-id call-17`,
			`id=$(sessionctl reserve "$session" --cost 0.50USD --ttl 2m) || echo "refused: $?"`,
		},
	}
}

// Settle is the spec of sessionctl settle; x are the exit statuses its help
// quotes.
func Settle(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "settle",
		Args: "SESSION RESERVATION",
		About: fmt.Sprintf(`Records the actual usage of a reservation and releases the rest of it, in one
transaction; every part of the usage must be at most what was reserved. A
retry with the same usage changes nothing; another usage, or settling a
released reservation, is a conflict (exit %d). A reservation that lapsed is
still settled: the usage happened. --conversation also adds the usage to a
conversation's totals in the same transaction (the cost when it is in USD,
the conversation's currency).`, x.Conflict),
		Examples: []string{
			`sessionctl settle task-7 call-17 --input-tokens 7410 --output-tokens 388 --cost 0.0871USD`,
			`sessionctl settle task-7 call-17 --output-tokens 120 --conversation task-7`,
		},
	}
}

// Release is the spec of sessionctl release; x are the exit statuses its help
// quotes.
func Release(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "release",
		Args: "SESSION RESERVATION",
		About: fmt.Sprintf(`Gives a reservation back unused. Releasing it again, or releasing one that
lapsed, changes nothing; releasing a settled one is a conflict (exit %d).`, x.Conflict),
		Examples: []string{"sessionctl release task-7 call-17"},
	}
}

// Limits is the spec of sessionctl limits.
var Limits = cmdspec.Spec{
	Name: "limits",
	Args: "AGENT",
	About: `Shows the spend limits an agent has across all of its sessions, with what is
spent and reserved in their current windows; with --limit or --clear,
replaces them first. A limit is METRIC=AMOUNT[/WINDOW]: the metric input,
output, tokens (input plus output) or cost (an amount with its currency
code, kept exactly in micro-units); the window lifetime (the default),
hour, day or month, calendar periods in UTC. A limit that keeps its metric
and window keeps what was spent and reserved.`,
	Examples: []string{
		`sessionctl limits agent-42 --limit cost=20USD/day --limit tokens=2000000/month`,
		`sessionctl limits agent-42 --json`,
	},
}

// GC is the spec of sessionctl gc; leftAlone are the reasons of the
// facets gc does not touch (each facet's maintenance entry).
func GC(leftAlone []string) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "gc",
		About: `Applies retention, facet by facet. Conversations: --older-than deletes
conversations not updated for that long (with their messages, artifacts,
traces, runs and reports), --keep-last keeps only the last N messages of
each conversation (positions of the kept messages do not change). gc is one
sweep (see sessionctl sweep) with these rules in place of the stored
policies: deletions run in short transactions of whole conversations (a few
hundred rows each), so that other writers are never held up for long, and
held conversations (sessionctl hold) are kept. Agent sessions: with
--older-than, gc counts those not updated for that long and keeps them
(their event logs are not trimmed either): the store has no delete-by-age
for them, and deleting what a listing found would lose an event appended in
between; delete them through the library (AgentSessions().DeleteSession).` + leftAloneHelp(leftAlone) + `

Then the WAL is checkpointed and truncated; with --vacuum the database file
is also rewritten without its free pages. --dry-run only counts what would
go. When stderr is a terminal, a status line shows the step running and what
it has deleted or counted so far. Before it changes anything, gc checks the
database (SQLite's quick_check, and that every stored document decodes, as
doctor does) and refuses to rewrite a damaged one. On PostgreSQL there is no
checkpoint (the server manages its WAL; autovacuum reclaims space) and
--vacuum is refused.`,
		Examples: []string{
			"sessionctl gc --older-than 30d --dry-run",
			"sessionctl gc --older-than 90d --keep-last 500 --vacuum",
		},
	}
}

// Fork is the spec of sessionctl fork.
var Fork = cmdspec.Spec{
	Name: "fork",
	Args: "APP USER SESSION | CONVERSATION",
	About: `Forks an agent session (or, given one id, a conversation) at an event: the
new session holds the events 1..--at of SESSION (all of them without --at)
and its next event follows them. Its session state is the state at that
point (the creation state with the state changes of the events up to it);
app and user state are shared as always. The fork copies no events, whatever
the length of the history: it reads them from SESSION's lineage. Later
events of either session never reach the other. --as names the fork
(default: a random id, printed). A conversation's fork holds its messages up
to and including position --at (default: the last) and copies its session
data; usage, cost and cost records start empty, artifacts, traces, runs and
reports stay.`,
	Examples: []string{
		"sessionctl fork support ada s1 --at 40 --as s1-retry",
		"sessionctl fork c1 --at 12 --as c1-retry",
		"sessionctl fork support ada s1 --json",
	},
}

// Rewind is the spec of sessionctl rewind.
var Rewind = cmdspec.Spec{
	Name: "rewind",
	Args: "APP USER SESSION | CONVERSATION",
	About: `Rewinds an agent session (or, given one id, a conversation) to event --to:
the events after it are superseded (kept, shown by --superseded and by
history, until retention removes them) and the session state returns to what
it was at that event (--to 0: the state the session was created with). Forks
taken earlier keep what they read. --superseded lists the superseded events
instead. For a conversation, --to is the position of the last message kept
(-1: none); its session data is not kept per message and stays as it is.`,
	Examples: []string{
		"sessionctl rewind support ada s1 --to 12",
		"sessionctl rewind c1 --to 7",
		"sessionctl rewind support ada s1 --superseded --json",
	},
}

// Sweep is the spec of sessionctl sweep.
var Sweep = cmdspec.Spec{
	Name: "sweep",
	About: `Applies the retention policies (sessionctl retention) once: removes what
is due, whole sessions at a time, in short transactions of about
--batch-rows rows, so that other writers wait a few milliseconds at most;
held sessions (sessionctl hold) are kept. Prints what each policy removed,
per facet, and the space given back (SQLite: incremental vacuum, for files
in that mode; PostgreSQL: an estimate of what a VACUUM would reclaim).
Sweeps are logged (sessionctl retention shows the last ones). With
--dry-run it says what each policy would remove and changes nothing
(a dry run does not foresee state that becomes an orphan when its
sessions go, nor what the size budget would remove).`,
	Examples: []string{
		"sessionctl sweep --dry-run",
		"sessionctl sweep --json",
	},
}

// Hold is the spec of sessionctl hold.
var Hold = cmdspec.Spec{
	Name: "hold",
	Args: "[list | FACET ID... | agent_sessions APP USER SESSION | release FACET ID...]",
	About: `Holds keep a session whatever the retention policies say, until
released. FACET is governance, runtime, conversations or agent_sessions;
an agent session is named by its app, user and session id. A session need
not exist to be held. With --tenant T the holds are tenant T's: hold lists,
places and releases T's own, and a hold keeps only T's session of that
name (without it, the default tenant's).

  hold [list]              lists the holds
  hold FACET ID...         holds the sessions (--reason says why), in order:
                           it stops at the first it cannot hold
  hold release FACET ID... releases them`,
	Examples: []string{
		"sessionctl hold conversations conv-42 conv-43 --reason 'legal hold 2026-114'",
		"sessionctl hold agent_sessions my-app user-1 session-9",
		"sessionctl hold release conversations conv-42",
	},
	Actions: []cmdspec.Action{
		{Name: "list", Flags: []string{"json"}},
		{Name: "add", Flags: []string{"reason", "json"}, Bare: true},
		{Name: "release", Flags: []string{"json"}},
	},
	Values: map[string][]string{"": HoldFacets, "release": HoldFacets},
}
