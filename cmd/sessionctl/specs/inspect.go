package specs

import (
	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/store"
)

// List is the spec of sessionctl list.
var List = cmdspec.Spec{
	Name: "list",
	About: `Lists sessions of one facet ordered by id, one page at a time: governed
sessions (the default; filters --agent and --status, where an active
session past its time limit lists as expired), runtime sessions (--facet
runtime; filter --owner, which implies it) or conversations (--facet
conversations; filter --parent, which implies it). When more sessions
follow, the cursor for the next page is printed (on stderr for tables, as
"next" in JSON); pass it to --after, or use --all.`,
	Examples: []string{
		"sessionctl list --agent agent-42 --status active",
		"sessionctl list --owner tui-7 --json",
		"sessionctl list --parent conv-1",
		"sessionctl list --facet conversations --limit 100 --after conv-0099",
	},
	Values: map[string][]string{
		"--facet":  {FacetGoverned, FacetRuntime, FacetConversations},
		"--status": {string(store.StatusActive), string(store.StatusClosed), string(store.StatusExpired)},
	},
}

// Show is the spec of sessionctl show.
var Show = cmdspec.Spec{
	Name: "show",
	Args: "ID",
	About: `Shows every facet the store holds for one session id: the governed
session's counters and limits, and its spend limits and its agent's with
what is spent and reserved; the runtime session's agent, workspace,
owner, model overrides, uploads and current turn; and the conversation's
metadata (state, message count, usage, cost). Facets the session does not
have are left out (null in JSON); an id with no facet at all is an error.`,
	Examples: []string{
		"sessionctl show 3f2a9c1e-...",
		"sessionctl show task-7 --json | jq .governed.calls_made",
	},
}

// Messages is the spec of sessionctl messages.
var Messages = cmdspec.Spec{
	Name: "messages",
	Args: "ID",
	About: `Prints a conversation's messages, oldest first: from position --from, at most
--limit of them, or the last --last ones (--last 0 prints none; --last
does not go with --from or --limit). Positions are gapless and stay put
when older messages are trimmed. Tables show each message on one line
(text, "[tool_use NAME {...}]", "[tool_result: ...]"), cut to --width
characters; --json prints the messages with every content block.

With --follow, messages prints from --from (or the last --last) on, then
every message as it is committed, also by other processes, until
interrupted (Ctrl-C); --json then prints one JSON object per line. Each
message is printed once, in order; to resume, pass the next position
(the last seq printed plus one) to --from.`,
	Examples: []string{
		"sessionctl messages conv-1 --last 20",
		"sessionctl messages conv-1 --last 5 --follow",
		"sessionctl messages conv-1 --from 100 --limit 50 --json",
	},
}

// Artifacts is the spec of sessionctl artifacts.
var Artifacts = cmdspec.Spec{
	Name: "artifacts",
	Args: "ID",
	About: `Lists a conversation's artifacts (tool outputs kept aside from the history)
ordered by URI: tool, sizes, times. --json includes each artifact's content;
--uri prints one artifact's content as it is (on a terminal its control
characters are escaped, as in every table).`,
	Examples: []string{
		"sessionctl artifacts conv-1",
		"sessionctl artifacts conv-1 --uri a3s://tool-output/read/abc > output.txt",
	},
}

// Traces is the spec of sessionctl traces.
var Traces = cmdspec.Spec{
	Name: "traces",
	Args: "ID",
	About: `Lists a conversation's trace events (tool and program executions), oldest
first, from position --from, at most --limit of them (0: all).

With --follow, traces prints from --from on, then every trace event as it
is committed, also by other processes, until interrupted (Ctrl-C); --json
then prints one JSON object per line.`,
	Examples: []string{
		"sessionctl traces conv-1",
		"sessionctl traces conv-1 --follow --json",
		"sessionctl traces conv-1 --from 200 --limit 100 --json",
	},
}

// Runs is the spec of sessionctl runs.
var Runs = cmdspec.Spec{
	Name: "runs",
	Args: "ID",
	About: `Lists a conversation's run records (agent runs with their status snapshot),
ordered by creation time. --events adds each run's replayable events to the
table; --json prints the records with their events.

With --follow --run RUN, runs prints the events of that run, then every
event as it is appended, also by other processes, until interrupted
(Ctrl-C); --json then prints one JSON object per line.`,
	Examples: []string{
		"sessionctl runs conv-1",
		"sessionctl runs conv-1 --follow --run run-7",
		"sessionctl runs conv-1 --json | jq '.runs[0].events'",
	},
}

// Reports is the spec of sessionctl reports.
var Reports = cmdspec.Spec{
	Name: "reports",
	Args: "ID",
	About: `Lists a conversation's verification reports, oldest first: subject, status
and how many of their checks passed; --json prints every check.`,
	Examples: []string{
		"sessionctl reports conv-1",
		"sessionctl reports conv-1 --json",
	},
}

// Uploads is the spec of sessionctl uploads.
var Uploads = cmdspec.Spec{
	Name: "uploads",
	Args: "ID",
	About: `Lists a runtime session's uploads in ref order: marker, workspace path, size
and SHA-256 (content is stored once per digest). --ref prints one upload's
content as it is (after checking it against its digest; on a terminal its
control characters are escaped, as in every table); with --json, its
metadata and the content in base64.`,
	Examples: []string{
		"sessionctl uploads sess-42",
		"sessionctl uploads sess-42 --ref photo-1 > photo.png",
	},
}

// Agents is the spec of sessionctl agents.
var Agents = cmdspec.Spec{
	Name: "agents",
	Args: "[list | show | events | state | delete] [APP USER SESSION]",
	About: `Agent sessions (the sessions of an ADK-style runtime, keyed by application,
user and session id): their state in three scopes and their event log.

  agents [list]                   lists sessions ordered by application, user
                                  and session id: of --app (every application
                                  when not given), of --user, not updated for
                                  --idle; --limit per page, --after the cursor
                                  printed after a page (--all reads every page)
  agents show APP USER SESSION    the session, its merged state (app: and
                                  user: keys as ADK names them) and its last
                                  --last events (default 10)
  agents events APP USER SESSION  its event log, oldest first: from --from
                                  (sequence number, from 1), at most --limit,
                                  or the last --last; --invocation ID selects
                                  one invocation's; --follow then prints new
                                  events as they commit, until interrupted
  agents state APP [USER [SESSION]]
                                  the app state, and the user and session
                                  state when named
  agents delete APP USER SESSION  deletes the session with its events and
                                  session state (app and user state stay);
                                  asks on a terminal, else needs --yes`,
	Examples: []string{
		"sessionctl agents --app support --user ada",
		"sessionctl agents show support ada s1",
		"sessionctl agents events support ada s1 --last 5 --follow",
		"sessionctl agents state support ada --json",
		"sessionctl agents delete support ada s1 --yes",
	},
	Actions: []cmdspec.Action{
		{Name: "list", Flags: []string{"app", "user", "idle", "limit", "after", "all", "json"}},
		{Name: "show", Flags: []string{"last", "json"}},
		{Name: "events", Flags: []string{"limit", "last", "from", "invocation", "follow", "json"}},
		{Name: "state", Flags: []string{"json"}},
		{Name: "delete", Flags: []string{"yes", "json"}},
	},
}

// History is the spec of sessionctl history.
var History = cmdspec.Spec{
	Name: "history",
	Args: "APP USER SESSION | CONVERSATION",
	About: `Prints the tree an agent session (or, given one id, a conversation) belongs
to: the session it was forked from (its lineage, not a conversation's parent
field), its forks and theirs, deleted sessions whose events forks still
read, the runs of events a rewind superseded, and the ranges compaction
records summarise. The session asked for is marked with *.`,
	Examples: []string{
		"sessionctl history support ada s1",
		"sessionctl history c1",
		"sessionctl history support ada s1 --json",
	},
}

// Stats is the spec of sessionctl stats.
var Stats = cmdspec.Spec{
	Name: "stats",
	About: `Summarizes the database, facet by facet: governed sessions by effective
status, runtime sessions by agent with running turns and uploads (count
and bytes), conversations by state with their messages, tokens and cost,
agent sessions with their applications, users and events and the keys of
their app, user and session state; then the database and WAL file sizes,
pages and free pages, and the schema version. On
PostgreSQL the sizes are those of the whole database (pg_database_size)
and of the store's tables with their indexes; there is no WAL file or page
count to report. With --tenant the counts are the tenant's rows only, and
the sizes, which are the whole database's, are left out (the schema
version is the database's).`,
	Examples: []string{
		"sessionctl stats",
		"sessionctl stats --tenant acme",
		"sessionctl stats --json | jq .governed.active",
	},
}

// Tenants is the spec of sessionctl tenants.
var Tenants = cmdspec.Spec{
	Name: "tenants",
	About: `Lists the tenants that own rows in the store (agent sessions or
their state, governed sessions, audit chains, spend limits,
conversations or runtime sessions), in byte order, with what each owns.
The default tenant (the rows written without --tenant) is not listed:
"sessionctl stats" counts it. A command run with --tenant NAME reads that
tenant's rows only.`,
	Examples: []string{
		"sessionctl tenants",
		"sessionctl tenants --json | jq -r '.items[].tenant'",
	},
}

// Audit is the spec of sessionctl audit.
var Audit = cmdspec.Spec{
	Name: "audit",
	Args: "[list | verify | checkpoint | prune]",
	About: `The audit trail: every governance decision (a create, each use or
reservation allowed or refused, a settle, a release, a close, an expiry, a
lapse, a cleanup, a change of limits), appended in the decision's own
transaction to its agent's hash chain.

  audit [list]      lists events in (agent, sequence) order, filtered by
                    --agent, --session, --kind, --outcome, --since, --until;
                    --limit per page, --after the cursor printed after it
                    (--all reads every page)
  audit verify      checks every chain: each event's hash covers its fields
                    and its predecessor's hash, and the chain ends at its
                    recorded head. Names the first event of each chain that
                    was changed, removed or inserted, and prints one digest
                    over every chain head: record it elsewhere to tell later
                    that a whole chain was not removed or rewritten. Exits 1
                    when a chain does not verify.
  audit checkpoint  appends a checkpoint to every chain (or --agent's): the
                    points where prune may cut
  audit prune       removes the events before each chain's newest
                    checkpoint made before --before (or --older-than ago;
                    --older-than 0s: the newest checkpoint made so far),
                    after checking that they verify; a chain that does not
                    verify is not cut (exit 1)`,
	Examples: []string{
		"sessionctl audit --agent agent-42 --since 2026-01-02T00:00:00Z",
		"sessionctl audit --outcome spend_limit_exceeded --json",
		"sessionctl audit verify",
		"sessionctl audit checkpoint && sessionctl audit prune --older-than 90d",
	},
	Actions: []cmdspec.Action{
		{Name: "list", Flags: []string{"agent", "session", "kind", "outcome", "since", "until", "limit", "after", "all", "json"}},
		{Name: "verify", Flags: []string{"json"}},
		{Name: "checkpoint", Flags: []string{"agent", "json"}},
		{Name: "prune", Flags: []string{"agent", "before", "older-than", "json"}},
	},
	Values: map[string][]string{"--kind": auditKinds()},
}

// Search is the spec of sessionctl search.
var Search = cmdspec.Spec{
	Name: "search",
	Args: "QUERY...",
	About: `Finds messages, agent events, trace events, artifacts and runs by what
was said in them. Every term of QUERY must occur in an item's text, as a
substring, ignoring case; terms of one or two characters (a CJK word, say)
are found too, but a query of only such terms scans the newest items
(--scan-limit) instead of the index and says so. Hits come best first
(--order rank: bm25 on SQLite, ts_rank on PostgreSQL) or newest first
(--order time), with a snippet whose matches are marked «like this».
--window N also prints the N items before and after each message or event
hit. --limit per page, --after the cursor printed after a page.`,
	Examples: []string{
		"sessionctl search kafka lag",
		"sessionctl search --app shop --user alice --order time refund",
		"sessionctl search --kind message --window 2 --json 東京",
	},
	Values: map[string][]string{"--kind": searchKinds(), "--facet": {FacetConversations, store.HoldAgentSessions},
		"--order": {string(store.SearchByRank), string(store.SearchByTime)}},
}

// Serve is the spec of sessionctl serve.
var Serve = cmdspec.Spec{
	Name: "serve",
	About: `Serves the read-only web console (package console) over HTTP: an overview
with charts, governed sessions, conversations, runtime sessions and agent
sessions, every page also as JSON (?format=json), and Prometheus metrics at
/metrics. The database is opened read-only, enforced by the database
itself (SQLite: mode=ro and query_only; PostgreSQL: read-only
transactions), so nothing the console does can change it.

It listens on the loopback interface by default. Listening on any other
address needs --basic-auth USER:PASSWORD or --token TOKEN (also read from
$SESSIONCTL_BASIC_AUTH and $SESSIONCTL_TOKEN, which keeps them out of the
process list); credentials are compared in constant time, and /healthz
answers without them. It runs until interrupted.`,
	Examples: []string{
		"sessionctl serve",
		"sessionctl --db sessions.db serve --addr 127.0.0.1:8080 --prefix /console",
		"SESSIONCTL_TOKEN=$(openssl rand -hex 16) sessionctl serve --addr 0.0.0.0:7777",
	},
}

// auditKinds are the kinds audit --kind takes.
func auditKinds() []string {
	var kinds []string
	for _, k := range []store.AuditKind{store.AuditCreate, store.AuditUse, store.AuditReserve, store.AuditSettle,
		store.AuditRelease, store.AuditClose, store.AuditExpire, store.AuditLapse, store.AuditCleanup,
		store.AuditLimits, store.AuditCheckpoint} {
		kinds = append(kinds, string(k))
	}
	return kinds
}

// searchKinds are the kinds of searchable items, as --kind takes them.
func searchKinds() []string {
	var kinds []string
	for _, k := range store.SearchKinds() {
		kinds = append(kinds, string(k))
	}
	return kinds
}
