// Package facet is the one registry of the store's facets: governed
// sessions (with their spend limits), runtime bookkeeping, conversations,
// agent sessions and the audit trail. Each
// entry names the facet and the database tables it owns (the same names on
// SQLite and PostgreSQL).
//
// Maintenance paths (the archive, the checks, sessionctl's gc and stats,
// the console) walk All instead of listing facets by hand, and tests hold
// the registry to the
// schema: every table of a fresh store belongs to exactly one facet (or is
// the migration bookkeeping of SchemaTables), and every registered table
// exists. A facet added to the store without an entry here, or an entry
// without its maintenance handling, fails those tests.
//
// The package is plain data; it knows no SQL and no store.
package facet

import (
	"maps"
	"slices"

	"github.com/agentstore/sessionstore/migrations"
)

// Name identifies a facet in code, in JSON and on the command line.
type Name string

// The facets, in the order maintenance paths handle them (All).
const (
	Governance    Name = "governance"
	Runtime       Name = "runtime"
	Conversations Name = "conversations"
	AgentSessions Name = "agent_sessions"
	Audit         Name = "audit"
)

// Facet describes one facet of the store.
type Facet struct {
	// Name identifies the facet.
	Name Name
	// Title names it for people, in the plural ("agent sessions").
	Title string
	// About says in one line what the facet keeps.
	About string
	// Since is the schema version (the number of the migration) that
	// created the facet's tables: a database at an older version has none
	// of them.
	Since int64
	// Tables are the database tables the facet owns, parents before their
	// children. Deleting the facet's data touches these tables only.
	Tables []string
	// Added maps the tables of Tables that later migrations added to the
	// facet to the schema version that created them; the others date from
	// Since.
	Added map[string]int64
	// Dropped maps the tables of Tables that later migrations removed to
	// the schema version that removed them: a store at that version or a
	// later one has none of them.
	Dropped map[string]int64
}

// TablesAt returns the facet's tables that a store at schema version has,
// in the order of Tables.
func (f Facet) TablesAt(version int64) []string {
	var out []string
	for _, t := range f.Tables {
		since, ok := f.Added[t]
		if !ok {
			since = f.Since
		}
		if dropped, ok := f.Dropped[t]; ok && version >= dropped {
			continue
		}
		if since <= version {
			out = append(out, t)
		}
	}
	return out
}

// registry holds the facets in the order of All. Keep it in step with
// migrations/*.sql and migrations/postgres/*.sql: the registry tests of
// sqlstore and pgstore compare it with a freshly migrated database.
var registry = []Facet{
	{
		Name:   Governance,
		Title:  "governed sessions",
		About:  "governed task sessions: call budgets, tool allow-lists, rate and time limits, request-id outcomes, spend limits and reservations",
		Since:  1,
		Tables: []string{"governed_sessions", "governed_use_requests", "spend_limits", "spend_reservations"},
		Added:  map[string]int64{"spend_limits": 9, "spend_reservations": 9},
	},
	{
		Name:  Runtime,
		Title: "runtime sessions",
		About: "runtime bookkeeping: sessions, model overrides, content-addressed uploads, turns and their cancel causes",
		Since: 3,
		Tables: []string{"runtime_sessions", "runtime_counters", "runtime_cancel_causes",
			"upload_blobs", "uploads"},
	},
	{
		Name:  Conversations,
		Title: "conversations",
		About: "conversation persistence: session data, messages, cost records, artifacts, traces, runs and reports",
		Since: 2,
		Tables: []string{"conversations", "conversation_messages", "conversation_cost_records",
			"conversation_artifacts", "conversation_trace_events", "conversation_runs",
			"conversation_run_events", "conversation_reports",
			"conversation_retired", "conversation_retired_messages"},
		Added: map[string]int64{"conversation_retired": 15, "conversation_retired_messages": 15},
	},
	{
		Name:  AgentSessions,
		Title: "agent sessions",
		About: "agent sessions keyed by app, user and session: event logs and app, user and session state",
		Since: 4,
		Tables: []string{"agent_sessions", "agent_events", "agent_app_state",
			"agent_user_state", "agent_session_state", "agent_state_log"},
		Added: map[string]int64{"agent_state_log": 12},
		// Migration 40 keeps a session's current state as the heads of
		// its state log.
		Dropped: map[string]int64{"agent_session_state": 40},
	},
	{
		Name:   Audit,
		Title:  "audit chains",
		About:  "the audit trail of governance decisions: one hash chain of events per governed session and one per agent for its own decisions, and the chains' heads",
		Since:  9,
		Tables: []string{"audit_events", "audit_heads"},
	},
}

// All returns every facet, in the order maintenance paths handle them:
// governance, runtime, conversations, agent sessions, audit. The result is
// a copy.
func All() []Facet {
	out := make([]Facet, len(registry))
	for i, f := range registry {
		f.Tables = slices.Clone(f.Tables)
		f.Added = maps.Clone(f.Added)
		f.Dropped = maps.Clone(f.Dropped)
		out[i] = f
	}
	return out
}

// Lookup returns the facet called name.
func Lookup(name Name) (Facet, bool) {
	for _, f := range All() {
		if f.Name == name {
			return f, true
		}
	}
	return Facet{}, false
}

// Owner returns the facet that owns table. Tables of SchemaTables, and
// tables that are not the store's, have none.
func Owner(table string) (Facet, bool) {
	for _, f := range All() {
		if slices.Contains(f.Tables, table) {
			return f, true
		}
	}
	return Facet{}, false
}

// SchemaTables are the store's tables that belong to no facet: the
// migration bookkeeping (goose's version table).
func SchemaTables() []string { return []string{migrations.TableName} }

// MaintenanceSince is the schema version that created MaintenanceTables.
const MaintenanceSince = 11

// MaintenanceTables are the store's tables that belong to no facet
// because they describe how the facets are kept: the retention policies,
// the holds, the lease of the background sweeper and the log of sweeps
// (schema version MaintenanceSince and later), and the removals a sweep
// has under way (MaintenanceAdded).
func MaintenanceTables() []string {
	return []string{"retention_holds", "retention_policies", "sweep_lease", "sweep_log", "sweep_removals"}
}

// MaintenanceAdded gives the schema version of the maintenance tables
// created after MaintenanceSince.
var MaintenanceAdded = map[string]int64{"sweep_removals": 28}

// maintenanceAt reports whether maintenance table t exists at version.
func maintenanceAt(t string, version int64) bool {
	return version >= MaintenanceSince && version >= MaintenanceAdded[t]
}

// IndexSince is the schema version that created the search index.
const IndexSince int64 = 14

// IndexQueueSince is the schema version from which the search index is
// folded in after the content's commit: search_pending (the queue of keys
// to fold) and search_state (whether the index is on) exist from it on.
const IndexQueueSince int64 = 27

// IndexTables are the store's derived tables: the search index and the
// rows of cross-session reads (store.Searcher), from schema version
// IndexSince on, and the queue of keys to fold into it and its setting,
// from IndexQueueSince on. They are derived from the facets' content
// (triggers queue each item's key in the transaction that writes the
// content; the store folds the queue in after the commit); no facet owns
// them, archives leave them out (an import queues and folds them again),
// and a reindex rebuilds them.
func IndexTables() []string { return []string{"search_docs", "search_pending", "search_state"} }

// SQLiteIndexTables are the tables of the search index that only SQLite
// has: the FTS5 virtual table and its shadow tables. They are part of the
// index (IndexTables), listed apart because PostgreSQL has none of them.
func SQLiteIndexTables() []string {
	return []string{"search_fts", "search_fts_config", "search_fts_data", "search_fts_docsize", "search_fts_idx"}
}

// KeyringSince is the schema version of encryption at rest (package keys).
const KeyringSince int64 = 16

// KeyringTables are the store's tables of encryption at rest, from schema
// version KeyringSince on: the queue of data keys to shred, written by
// triggers when a session row that names a data key is deleted, and
// drained once the key file is gone. No facet owns it and archives leave
// it out.
func KeyringTables() []string { return []string{"key_shred_queue"} }

// TablesAt returns every table a store at schema version has, sorted: the
// tables of the facets created at or before version, SchemaTables,
// MaintenanceTables from MaintenanceSince (or MaintenanceAdded) on and IndexTables from
// IndexSince on (not SQLiteIndexTables).
func TablesAt(version int64) []string {
	out := SchemaTables()
	for _, t := range MaintenanceTables() {
		if maintenanceAt(t, version) {
			out = append(out, t)
		}
	}
	for _, f := range All() {
		out = append(out, f.TablesAt(version)...)
	}
	if version >= IndexSince {
		for _, t := range IndexTables() {
			if t == "search_docs" || version >= IndexQueueSince {
				out = append(out, t)
			}
		}
	}
	if version >= KeyringSince {
		out = append(out, KeyringTables()...)
	}
	slices.Sort(out)
	return out
}
