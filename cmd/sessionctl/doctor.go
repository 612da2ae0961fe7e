package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
)

var doctorSpec = spec{
	name: "doctor",
	about: `Checks a database without changing it: that it is a SQLite file, its
integrity (PRAGMA integrity_check, or quick_check with --quick), foreign
keys (PRAGMA foreign_key_check), the schema version against this binary,
that every table of every facet at that version is there (a table of no
facet is a warning), that every stored document of every facet decodes
(messages, trace events, run snapshots and events, reports, policies,
agent events and state values, recorded use outcomes, upload content
against its SHA-256; the first damaged ones are named by their ids), the
journal mode, the WAL size, that the database can be written (a
read-only or immutable file or directory fails; it is then read without
creating anything beside it), and finally that the store opens and
answers. Exits 1 when any check fails; warnings alone exit 0.

On PostgreSQL (--db postgres://...) it checks the connection (server
version, encoding, connections in use against max_connections), the schema
version against this binary, the tables of every facet, that every stored
document decodes, that the session may write (not a read-only server or
session, and the privileges to change every table of the store), that no
index of the store's schema is invalid, that every foreign key is validated and that no row refers to a
missing parent row (a scan of every foreign key; --quick skips it), and
that the store opens and answers.`,
	examples: []string{
		"sessionctl doctor",
		"sessionctl --db /var/lib/agent/sessions.db doctor --json || alert",
		"sessionctl --db postgres://agent@db.internal/agents doctor",
	},
}

// Check outcomes.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

// walWarnBytes is the WAL size doctor warns about: the store's
// journal_size_limit, beyond which something keeps checkpoints from
// completing (a long-lived reader).
const walWarnBytes = 64 << 20

// checkJSON is one check in the JSON of doctor.
type checkJSON struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// doctorJSON is the JSON document of doctor.
type doctorJSON struct {
	Path    string      `json:"path"`
	Healthy bool        `json:"healthy"`
	Checks  []checkJSON `json:"checks"`
}

func runDoctor(ctx context.Context, g *globals, args []string) error {
	sp := doctorSpec
	fs := g.newFlags(sp)
	quick := fs.Bool("quick", false, "run quick_check instead of the full integrity_check (PostgreSQL: skip the orphan-row scan)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	doc := doctorJSON{Path: g.dbName()}
	if g.isPG() {
		doc.Checks = diagnosePG(ctx, g, *quick)
	} else {
		if err := g.mustExistFile(); err != nil {
			return g.fail(sp.name, err)
		}
		doc.Checks = diagnose(ctx, g, *quick)
	}
	doc.Healthy = true
	for _, c := range doc.Checks {
		if c.Status == checkFail {
			doc.Healthy = false
		}
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
	} else {
		tw := newTable(g.stdout)
		fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
		for _, c := range doc.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, c.Detail)
		}
		tw.Flush()
		if doc.Healthy {
			fmt.Fprintf(g.stdout, "%s is healthy\n", doc.Path)
		}
	}
	if !doc.Healthy {
		fmt.Fprintf(g.stderr, "sessionctl doctor: %s is unhealthy\n", doc.Path)
		return exitStatus(exitError)
	}
	return nil
}

// diagnose runs the checks in order; a check that makes the next ones
// meaningless stops the list.
func diagnose(ctx context.Context, g *globals, quick bool) []checkJSON {
	var checks []checkJSON
	add := func(name, status, format string, args ...any) {
		checks = append(checks, checkJSON{Name: name, Status: status, Detail: oneLine(fmt.Sprintf(format, args...))})
	}
	walBytes := fileSize(g.db + "-wal")
	add("file", checkOK, "database %s, wal %s", humanBytes(fileSize(g.db)), humanBytes(walBytes))

	// A database the store cannot write is read without creating anything
	// beside it, and the store is not opened (it would refuse).
	writeErr := sqlstore.CheckWritable(g.db)
	openDB := func(string, bool) (*sql.DB, error) { return openRawReadOnly(g.db) }
	if writeErr == nil {
		openDB = openRaw
	}
	db, err := openDB(g.db, true)
	if err != nil {
		add("sqlite", checkFail, "cannot open: %v", err)
		return checks
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		add("sqlite", checkFail, "not a readable SQLite database: %v", mapRawErr(err))
		return checks
	}
	add("sqlite", checkOK, "SQLite database, %d schema objects", tables)

	integrityOK := integrityCheck(ctx, db, quick, add)
	foreignKeyCheck(ctx, db, add)

	schemaOK := false
	tablesAt := int64(-1) // the version whose tables to check; -1: unknown
	latest, err := migrations.Latest()
	if err != nil {
		add("schema", checkFail, "%v", err)
	} else if current, ok, err := rawSchemaVersion(ctx, db); err != nil {
		add("schema", checkFail, "%v", mapRawErr(err))
	} else if !ok {
		add("schema", checkFail, "not a session store: no %s table", migrations.TableName)
	} else if current > latest {
		add("schema", checkFail, "version %d is newer than this binary (%d): use a newer sessionctl", current, latest)
	} else if current < latest {
		// Not opened below: opening the store would migrate the file, and
		// doctor changes nothing.
		add("schema", checkWarn, "version %d, this binary has %d: run sessionctl migrate up", current, latest)
		tablesAt = current
	} else {
		schemaOK = true
		tablesAt = current
		add("schema", checkOK, "version %d, the same as this binary", current)
	}
	documentsOK := true
	if tablesAt >= 0 {
		if tables, err := sqliteTables(ctx, db); err != nil {
			add("tables", checkFail, "%v", mapRawErr(err))
		} else {
			if !tablesCheck(tables, tablesAt, add) {
				schemaOK = false
			}
			documentsOK = addDocumentsCheck(ctx, sqliteRows(db), false, tables, add)
		}
	}

	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		add("journal", checkFail, "%v", mapRawErr(err))
	} else if !strings.EqualFold(mode, "wal") {
		add("journal", checkWarn, "journal_mode is %s; the store uses wal", mode)
	} else {
		add("journal", checkOK, "journal_mode wal")
	}
	if walBytes > walWarnBytes {
		add("wal", checkWarn, "%s: a long-lived reader may keep checkpoints from completing; run sessionctl cleanup", humanBytes(walBytes))
	} else {
		add("wal", checkOK, "%s", humanBytes(walBytes))
	}

	if writeErr != nil {
		add("write", checkFail, "the database cannot be written: %v", writeErr)
	} else {
		add("write", checkOK, "the file and its directory can be written")
	}
	if integrityOK && schemaOK && documentsOK && writeErr == nil {
		db.Close() // the store checks the file itself; do not pin a read snapshot
		st, err := g.openOrCreate(ctx)
		if err != nil {
			add("store", checkFail, "%v", err)
			return checks
		}
		defer st.Close()
		if err := st.HealthCheck(ctx); err != nil {
			add("store", checkFail, "health check: %v", err)
		} else {
			add("store", checkOK, "opens and answers reads and writes")
		}
		auditCheck(ctx, st, add) // audit.go
	}
	return checks
}

// sqliteTables lists the tables of a SQLite database, without SQLite's
// own.
func sqliteTables(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// tablesCheck compares the tables of a store at schema version with the
// facet registry: a table of a facet (or the migration table) that is
// missing fails the check; a table of no facet is a warning. It reports
// whether no table is missing.
func tablesCheck(tables []string, version int64, add func(name, status, format string, args ...any)) bool {
	want := facet.TablesAt(version)
	var missing, unknown []string
	for _, t := range want {
		if !slices.Contains(tables, t) {
			if f, ok := facet.Owner(t); ok {
				t += " (" + string(f.Name) + ")"
			}
			missing = append(missing, t)
		}
	}
	for _, t := range tables {
		if !slices.Contains(want, t) {
			unknown = append(unknown, t)
		}
	}
	slices.Sort(unknown)
	switch {
	case len(missing) > 0:
		add("tables", checkFail, "%d %s missing: %s", len(missing), plural(len(missing), "table", "tables"), strings.Join(missing, ", "))
		return false
	case len(unknown) > 0:
		add("tables", checkWarn, "%d %s of no facet: %s", len(unknown), plural(len(unknown), "table", "tables"), strings.Join(unknown, ", "))
		return true
	}
	var parts []string
	n := 0
	for _, f := range facet.All() {
		if t := f.TablesAt(version); len(t) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.Name, len(t)))
			n += len(t)
		}
	}
	add("tables", checkOK, "%d tables of %d facets (%s) and the migration table", n, len(parts), strings.Join(parts, ", "))
	return true
}

// integrityCheck runs integrity_check (or quick_check) and reports the
// first problems it lists.
func integrityCheck(ctx context.Context, db *sql.DB, quick bool, add func(name, status, format string, args ...any)) bool {
	pragma := "PRAGMA integrity_check(20)"
	if quick {
		pragma = "PRAGMA quick_check(20)"
	}
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		add("integrity", checkFail, "%v", mapRawErr(err))
		return false
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			add("integrity", checkFail, "%v", mapRawErr(err))
			return false
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		add("integrity", checkFail, "%v", mapRawErr(err))
		return false
	}
	if len(problems) > 0 {
		add("integrity", checkFail, "%d %s: %s", len(problems), plural(len(problems), "problem", "problems"), strings.Join(problems[:min(3, len(problems))], "; "))
		return false
	}
	add("integrity", checkOK, "%s ok", strings.TrimSuffix(strings.TrimPrefix(pragma, "PRAGMA "), "(20)"))
	return true
}

// foreignKeyCheck reports rows whose parent row is missing.
func foreignKeyCheck(ctx context.Context, db *sql.DB, add func(name, status, format string, args ...any)) {
	rows, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		add("foreign_keys", checkFail, "%v", mapRawErr(err))
		return
	}
	defer rows.Close()
	var n int
	var first string
	for rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int64
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			add("foreign_keys", checkFail, "%v", mapRawErr(err))
			return
		}
		if n == 0 {
			first = fmt.Sprintf("a row of %s refers to a missing row of %s", table, parent)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		add("foreign_keys", checkFail, "%v", mapRawErr(err))
		return
	}
	if n > 0 {
		add("foreign_keys", checkFail, "%d %s violate foreign keys (%s)", n, plural(n, "row", "rows"), first)
		return
	}
	add("foreign_keys", checkOK, "no violations")
}
