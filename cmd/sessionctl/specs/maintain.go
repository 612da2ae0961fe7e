package specs

import (
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/store"
)

// Retention is the spec of sessionctl retention.
var Retention = cmdspec.Spec{
	Name: "retention",
	Args: "[show | set KIND [VALUE] | remove KIND]",
	About: `The retention policies, stored in the database so that every process,
sessionctl and the console see the same ones. A sweep (sessionctl sweep,
or a store opened with a background sweeper) applies them.

  retention [show]           lists the policies, the holds and the last
                             sweeps
  retention set KIND VALUE   sets a policy: VALUE is a duration for the
                             kinds that take an age (30d, 12h), a count for
                             messages_keep_last, a size for size_budget
                             (bytes, or with KB, MB, GB, KiB, MiB, GiB);
                             orphan_state takes none. --reads-count lets
                             reads recorded by the application extend the
                             life of conversations and agent sessions
  retention remove KIND      removes a policy

Kinds:
` + kindsHelp(),
	Examples: []string{
		"sessionctl retention set conversations_idle 30d",
		"sessionctl retention set size_budget 2GiB",
		"sessionctl retention --json",
	},
	Actions: []cmdspec.Action{
		{Name: "show", Flags: []string{"sweeps", "json"}},
		{Name: "set", Flags: []string{"reads-count", "json"}},
		{Name: "remove", Flags: []string{"json"}},
	},
	Values: map[string][]string{"set": policyKindNames(), "remove": policyKindNames()},
}

// Migrate is the spec of sessionctl migrate; x are the exit statuses its help
// quotes.
func Migrate(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "migrate",
		Args: "[status|up]",
		About: fmt.Sprintf(`"status" (the default) lists the schema migrations this binary knows and
whether each is applied to the database; it never changes the file. It
exits with status %d when the database's schema is newer than this binary
(as every command does on such a database). "up"
applies the pending ones under the writer lock, so that concurrent
processes never migrate twice, and creates the database when it does not
exist. A database migrated by a newer binary is refused.

On PostgreSQL (--db postgres://...) the store lives in the first schema of
the URL's search_path (public by default); "up" creates its tables there
when missing, under an advisory lock so that concurrent migrators are safe.`, x.SchemaTooNew),
		Examples: []string{
			"sessionctl migrate status --json",
			"sessionctl --db /var/lib/agent/sessions.db migrate up",
			"sessionctl --db 'postgres://agent@db.internal/agents?search_path=sessions' migrate status",
		},
		Actions: []cmdspec.Action{{Name: "status", Flags: []string{"json"}}, {Name: "up", Flags: []string{"json"}}},
	}
}

// Doctor is the spec of sessionctl doctor; x are the exit statuses its help
// quotes.
func Doctor(x Exits) cmdspec.Spec {
	return cmdspec.Spec{
		Name: "doctor",
		About: fmt.Sprintf(`Checks a database without changing it: that it is a SQLite file, its
integrity (PRAGMA integrity_check, or quick_check with --quick), foreign
keys (PRAGMA foreign_key_check), the schema version against this binary,
that every table of every facet at that version is there (a table of no
facet is a warning), that every stored document of every facet decodes
(messages, trace events, run snapshots and events, reports, policies, agent
events and state values, recorded use outcomes, upload content against its
SHA-256; the first damaged ones are named by their ids), the journal mode,
the WAL size, that the database can be written (a read-only or immutable
file or directory fails; it is then read without creating anything beside
it), the permissions of its files (one every user may write is a warning),
whether another process holds it, and finally that the store opens and
answers and its audit chains verify. Exits 1 when any check fails (%d when
the file is not a session store, as every command does); warnings alone
exit 0.

On PostgreSQL (--db postgres://...) it checks the connection (server
version, encoding, connections in use against max_connections), the schema
version against this binary, the tables of every facet, that every stored
document decodes, that the session may write (not a read-only server or
session, and the privileges to change every table of the store), that no
index of the store's schema is invalid, that every foreign key is validated
and that no row refers to a missing parent row (a scan of every foreign key;
--quick skips it), and that the store opens and answers.`, x.NotStore),
		Examples: []string{
			"sessionctl doctor",
			"sessionctl --db /var/lib/agent/sessions.db doctor --json || alert",
			"sessionctl --db postgres://agent@db.internal/agents doctor",
		},
	}
}

// Backup is the spec of sessionctl backup.
var Backup = cmdspec.Spec{
	Name: "backup",
	Args: "FILE",
	About: `Writes a consistent copy of the database to FILE: every page of one
snapshot (one read transaction, so other processes may keep writing while
it runs), with SQLite's online backup, into a temporary file beside FILE.
The copy is then checked — PRAGMA integrity_check, and the row count of
every table against the source's in the same snapshot — synced, renamed to
FILE, and the directory synced, before backup reports success; a copy that
fails a check is removed. The copy is one self-contained file (rollback
journal mode, no -wal), readable and writable by its owner only (mode
0600, as export files are); it keeps the source's free pages (cleanup
--vacuum first for a compact copy).

FILE must not be empty, must not be one of the database's own files (the
database, its -wal, -shm, -journal or -writer.lock), and must not exist
unless --force is given. Never copy a live database file with cp: the WAL
holds committed transactions the main file does not.

When stderr is a terminal, a status line shows the step running and the
pages copied of the total.

Not supported on PostgreSQL (exit status 1): back the store's schema up
with the server's own tools, e.g. pg_dump --schema=NAME, or continuous
archiving.`,
	Examples: []string{
		"sessionctl backup /backups/sessions-$(date +%F).db",
		"sessionctl backup --force /backups/sessions-latest.db",
	},
}

// Export is the spec of sessionctl export.
var Export = cmdspec.Spec{
	Name: "export",
	Args: "[ID...]",
	About: fmt.Sprintf(`Exports sessions as one JSON document (format %q, version
%d): every facet of the given ids, or everything. Governed sessions keep their
counters, rate window, status and times, with their spend limits and
reservations and their agents' limits (the "spend" section); runtime
sessions come with their overrides and uploads (content in base64);
conversations with their messages, cost records, artifacts, trace events,
run records and verification reports (never an LLM API key: the store does
not keep one); agent sessions with their event logs and session state, and
the app and user state they share once per application and per user (event
data and state values are JSON text in strings, so that they come back byte
for byte); the audit trail as whole hash chains with their heads (with ids,
the chains of the agents of the selected governed sessions). An ID selects
the governed session, runtime session and conversation of that id and the
agent sessions of that session id in any application and user.
"sessionctl import" reads the file back (and files of every earlier
version); a Go program does both with package archive.

Everything is read from one snapshot of the database, so a file taken while
the store is in use is the state of one instant and always imports. Writes
to stdout unless --output is given; --output FILE is written to a temporary
file beside it (mode 0600) and put in place once complete. The document is
written one item at a time, so export's memory does not grow with the
database. When stderr is a terminal (and the document does not go to a
terminal), a status line shows the section being written and the items and
bytes written so far.

The document holds the default tenant's rows and then every other
tenant's, each restored to its tenant by import (tenants since format
version 6).
--tenant T exports tenant T's rows alone (governed sessions with their
spend, agent sessions and audit chains: the facets scoped by tenants so
far), which import restores to T, or to the tenant its own --tenant names;
--default-tenant-only exports the default tenant's rows alone.`, archive.Format, archive.Version),
	Examples: []string{
		"sessionctl export > all.json",
		"sessionctl export task-7 task-8 --output two.json",
	},
}

// Import is the spec of sessionctl import.
var Import = cmdspec.Spec{
	Name: "import",
	Args: "FILE...",
	About: fmt.Sprintf(`Imports sessions from files ("-" reads stdin) of two formats, told apart by
their content:

  - "sessionctl export" files (versions 1 to %d; a newer version is
    refused): every record comes back exactly as exported — governed
    sessions with their counters, rate window, status and times, spend
    limits and reservations; runtime sessions with their times,
    overrides, uploads (each checked against its SHA-256) and last turn
    (no longer running: it belonged to the process that ran it);
    conversations with their version, message positions and times, cost
    records, artifacts, trace events, run records and reports;
    agent sessions with their version, times, session state and event
    logs, and the app and user state they share (a stored state key with
    another value is a conflict, like an existing id); audit chains whole,
    each checked to verify and end at its head (an agent with a chain is
    a conflict, like an existing id);
  - a3s session files (the JSON the a3s-code file store writes per
    session), as conversations; an "api_key" in them is never stored.

Each file is imported in one transaction, read one item at a time: it is
imported completely or not at all — a bad record, an id that already
exists (unless --skip-existing) or a killed process leaves nothing of it,
and running the import again imports it whole. Files are imported in
order; the first bad file stops the import (the files before it stay
imported) — use --dry-run to check every file first: against the store
when it exists (each file is imported and rolled back, so an id that
exists is a conflict there as here; files are checked one by one, not
against each other), changing nothing. Other writers wait while a file
is imported or checked (on SQLite the write lock is held). Creates the
database file when it does not exist, and removes it again when the
first file fails. When stderr is a terminal, a status
line shows the file being imported, the records imported so far and the
bytes read of the file. A Go program imports with package archive.

The rows of each tenant go back to that tenant (export files since version
6 hold every tenant's; earlier ones the default tenant's). With --tenant T
every row goes to tenant T instead: the file must hold one tenant's rows
(the default tenant's, or an export --tenant), not several tenants'.`, archive.Version),
	Examples: []string{
		"sessionctl import all.json",
		"sessionctl --db restored.db import --skip-existing ~/.a3s/sessions/*.json",
	},
}

// Keys is the spec of sessionctl keys.
var Keys = cmdspec.Spec{
	Name: "keys",
	Args: "[status | rotate | gc | new FILE]",
	About: `Encryption at rest. With key-encryption keys (KEKs) given by --key-file FILE
(default $SESSIONSTORE_KEY_FILE) or by $SESSIONSTORE_KEY, every command
opens the store with its keyring and every new agent session, conversation
and runtime session gets a data key of its own: its content (events and
session state; messages, artifacts, traces, runs and reports; workspace and
uploads) is stored sealed (AES-256-GCM). The keyring of a SQLite file is the
directory <db>.keyring beside it; on PostgreSQL give --keyring DIR (default
$SESSIONSTORE_KEYRING). A key file holds one "version:base64-key" line per
KEK version (32 bytes); the last line is the current version. Deleting a
session shreds its data key: its rows are unreadable in every copy of the
database.

  keys [status]  counts the keyring's data keys by the KEK version that
                 wraps them
  keys rotate    re-wraps every data key not under the current version
                 (content is not touched); it can be interrupted and run
                 again. Afterwards the old versions can be removed from the
                 key file and destroyed.
  keys gc        shreds orphan data keys: keys no session names, older
                 than --grace (default 1h; a key is written before its
                 session commits, so a crash in between leaves one).
                 --dry-run lists them. The keyring must be this
                 database's alone.
  keys new FILE  writes a new key file: one KEK of 32 random bytes as
                 version --kek-version (default v1), mode 0600; it refuses a
                 FILE that exists. It needs no database. Keep the file
                 apart from the database and its backups.`,
	Examples: []string{
		"sessionctl --key-file /etc/sessionstore/kek keys status",
		"SESSIONSTORE_KEY=\"$(cat kek)\" sessionctl keys rotate --json",
		"sessionctl --key-file kek keys gc --dry-run --grace 1d",
		"sessionctl keys new /etc/sessionstore/kek && sessionctl --key-file /etc/sessionstore/kek create --agent a",
	},
	Actions: []cmdspec.Action{
		{Name: "status", Flags: []string{"json"}},
		{Name: "rotate", Flags: []string{"json"}},
		{Name: "gc", Flags: []string{"dry-run", "grace", "json"}},
		{Name: "new", Flags: []string{"kek-version", "json"}},
	},
}

// Reindex is the spec of sessionctl reindex.
var Reindex = cmdspec.Spec{
	Name: "reindex",
	About: `Rebuilds the search index from the content, online: in batches of
--batch items, one short write transaction each, while other processes keep
reading and writing. Index rows whose content is gone are removed. Without
changes, --check only compares the index with the content (doctor does the
same) and exits 1 when they differ.`,
	Examples: []string{
		"sessionctl reindex --check",
		"sessionctl reindex --batch 5000",
	},
}

// Demo is the spec of sessionctl demo.
var Demo = cmdspec.Spec{
	Name: "demo",
	About: `Shows what the store does, on the database of --db (default ./sessions.db):
creates a governed session with a budget of 3 calls and spends it (an
unauthorized tool and the call past the budget are refused); records the
same session's conversation (messages with a tool call, usage and cost);
registers it with the runtime, stores an upload (content-addressed by
SHA-256) and runs a turn that a client cancels (the cause is recorded
durably and read back once); lets a cost limit stop the agent (each model
call reserves an upper bound and settles what it cost, until the next
reservation would pass the limit) and verifies the audit trail of every
decision; branches an agent session's history (a compaction record that
summarises its first events, and a fork that continues on its own); and
prints what was stored. The file is created when it does not
exist; an existing database is kept and the demo adds its own sessions to
it, unless --fresh removes it first.

--fresh removes only a session store that no other process holds (open,
locked or writing), and only one that holds nothing but what earlier demos
wrote; a database with other data is removed only with --yes as well. A
file that is not a session store is never removed. Inspect the result with
"sessionctl list" and "sessionctl show ID". On PostgreSQL the store's
tables are created in the schema when missing; --fresh is refused (drop
the schema yourself).`,
	Examples: []string{
		"sessionctl demo",
		"sessionctl --db /tmp/demo.db demo --fresh && sessionctl --db /tmp/demo.db list",
	},
}

// Bench is the spec of sessionctl bench.
var Bench = cmdspec.Spec{
	Name: "bench",
	About: `Measures the fsync rate F of DIR, then Use (1 and N callers), a message
append at 10 and at 10,000 messages of history, get by id and a list page
(100 of 10,000) of governed sessions, and agent sessions (ADK's model):
create, event append (1 caller, and 4 callers on sessions of their own: group
commit puts their appends in one fsync), the last 100 of 1,000 events, a
list page (100 of 1,000); prints ops/s, p50, p99 and the ratio to F. On
SQLite each scenario gets a temporary database in DIR; the database of --db is
not touched and its directory is the default DIR. With a postgres:// --db,
each scenario runs in a temporary schema of that database, dropped at the
end (--sync FULL is synchronous_commit=on, NORMAL is off), and F is the
fsync rate of DIR (default: the system's temporary directory), meaningful
when the server's data is on that disk.`,
	Examples: []string{"sessionctl bench --dir /var/lib/agent --duration 5s",
		"sessionctl --db postgres://localhost/agents bench --duration 5s"},
	Values: map[string][]string{"--sync": {"FULL", "NORMAL"}},
}

// Version is the spec of sessionctl version.
var Version = cmdspec.Spec{
	Name: "version",
	About: `Prints the version of sessionctl (the module version and VCS revision it
was built from), the Go and SQLite versions, and the newest schema version
it can read and migrate to. It does not open the database.

The revision is the one "go build" stamps when it runs in a git checkout
(vcs.revision; "modified" when the work tree had uncommitted changes).
Where Go stamps none (-buildvcs=false, a linked git worktree, a source
tarball), a build may give it: go build -ldflags "-X
main.buildRevision=$(git rev-parse HEAD)" ./cmd/sessionctl.`,
	Examples: []string{"sessionctl version", "sessionctl version --json"},
}

// Completion is the spec of sessionctl completion.
var Completion = cmdspec.Spec{
	Name: "completion",
	Args: "bash | zsh | fish",
	About: `Prints a shell completion script for sessionctl: commands, their flags,
their actions (agents show, audit verify, migrate up, completion bash, ...),
the global flags, and the values of flags and operands that take one of a
few (list --facet runtime, audit --kind checkpoint, hold release
conversations, retention set conversations_idle, ...). The script asks
sessionctl for the words, so they are always this binary's. Load it in the
shell's start-up file.`,
	Examples: []string{
		`source <(sessionctl completion bash)     # in ~/.bashrc`,
		`sessionctl completion zsh > "${fpath[1]}/_sessionctl"`,
		`sessionctl completion fish > ~/.config/fish/completions/sessionctl.fish`,
	},
	Actions: []cmdspec.Action{{Name: "bash"}, {Name: "zsh"}, {Name: "fish"}},
}

// policyKindNames are the retention policy kinds.
func policyKindNames() []string {
	var names []string
	for _, k := range store.PolicyKinds() {
		names = append(names, string(k.Kind))
	}
	return names
}

// kindsHelp lists the policy kinds for --help.
func kindsHelp() string {
	var b strings.Builder
	for _, k := range store.PolicyKinds() {
		// The description wraps under itself, within 80 columns.
		// VALUE, as "retention set KIND VALUE" names it, stands for the
		// store's parameter (max_age, keep_last, max_bytes).
		about := strings.NewReplacer(string(store.ParamMaxAge), "VALUE", string(store.ParamKeepLast), "VALUE",
			string(store.ParamMaxBytes), "VALUE").Replace(k.About)
		for i, line := range clitext.WrapWords(about, 80-23) {
			name := ""
			if i == 0 {
				name = string(k.Kind)
			}
			fmt.Fprintf(&b, "  %-20s %s\n", name, line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
