package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/migrations"
)

// walWarnBytes is the WAL size Check warns about: the store's
// journal_size_limit, beyond which something keeps checkpoints from
// completing (a long-lived reader).
const walWarnBytes = 64 << 20

// Check runs every check of the SQLite database at path, without changing
// it, and returns their results in order: "file" (sizes), "sqlite" (it is
// a SQLite database), "integrity" (integrity_check, or quick_check with
// opts.Quick), "foreign_keys" (foreign_key_check), "schema" (the version
// against this binary), "tables" (every facet's tables, see
// check.Report.Tables), "documents" (every stored document decodes),
// "journal" (WAL mode), "wal" (its size), "write" (the file and its
// directory can be written), "modes" (the permissions of the database's
// files; one that every user may write is a warning), "lock" (whether
// another process holds the database, see InUse: information, not a
// failure), then, when all of these passed, "store" (it
// opens with storeOpts and answers reads and writes, see HealthCheck) and
// "audit" (every audit chain verifies) and "search_index" (the search index agrees with the content). A check that makes the next ones
// meaningless ends the list. A database the store cannot write is read
// without creating anything beside it, and is not opened; a schema older
// than this binary is not opened either (opening would migrate it).
//
// The error is not nil only when there is nothing to check: path does
// not exist (fs.ErrNotExist) or is a directory. Everything found is in the
// report; Failed tells whether the database is healthy.
func Check(ctx context.Context, path string, opts check.Options, storeOpts ...Option) (check.Report, error) {
	var r check.Report
	fi, err := os.Stat(path)
	if err != nil {
		return r, err
	}
	if fi.IsDir() {
		return r, fmt.Errorf("sqlstore: %s is a directory, not a database file", path)
	}
	walBytes := sizeOf(path + "-wal")
	r.Add("file", check.OK, "database %s, wal %s", humanize.Bytes(sizeOf(path)), humanize.Bytes(walBytes))

	writeErr := CheckWritable(path)
	db, err := OpenInspect(path)
	if err != nil {
		r.Add("sqlite", check.Fail, "cannot open: %v", err)
		return r, nil
	}
	defer db.Close()
	var objects int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		r.Add("sqlite", check.Fail, "not a readable SQLite database: %v", mapErr(err))
		return r, nil
	}
	r.Add("sqlite", check.OK, "SQLite database, %d schema objects", objects)

	integrityOK := integrityCheck(ctx, db, opts.Quick, &r)
	foreignKeyCheck(ctx, db, &r)

	schemaOK := false
	tablesAt := int64(-1) // the version whose tables to check; -1: unknown
	latest, err := migrations.Latest()
	if err != nil {
		r.Add("schema", check.Fail, "%v", err)
	} else if current, ok, err := SchemaVersionOf(ctx, db); err != nil {
		r.Add("schema", check.Fail, "%v", err)
	} else if !ok {
		r.Add("schema", check.Fail, "not a session store: no %s table", migrations.TableName)
	} else {
		// An older schema is not opened below: opening the store would
		// migrate the file, and Check changes nothing.
		switch r.Schema(current, latest) {
		case 0:
			schemaOK = true
			tablesAt = current
		case -1:
			tablesAt = current
		}
	}
	documentsOK := true
	if tablesAt >= 0 {
		if tables, err := TablesOf(ctx, db); err != nil {
			r.Add("tables", check.Fail, "%v", err)
		} else {
			if !r.Tables(tables, tablesAt) {
				schemaOK = false
			}
			documentsOK = r.Documents(ctx, rowSource{db}, tables, false)
		}
	}

	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		r.Add("journal", check.Fail, "%v", mapErr(err))
	} else if !strings.EqualFold(mode, "wal") {
		r.Add("journal", check.Warn, "journal_mode is %s; the store uses wal", mode)
	} else {
		r.Add("journal", check.OK, "journal_mode wal")
	}
	if walBytes > walWarnBytes {
		r.Add("wal", check.Warn, "%s: a long-lived reader may keep checkpoints from completing; run sessionctl cleanup", humanize.Bytes(walBytes))
	} else {
		r.Add("wal", check.OK, "%s", humanize.Bytes(walBytes))
	}

	if writeErr != nil {
		r.Add("write", check.Fail, "the database cannot be written: %v", writeErr)
	} else {
		r.Add("write", check.OK, "the file and its directory can be written")
	}
	modesCheck(path, &r)
	if how, err := InUse(path); err != nil {
		r.Add("lock", check.Warn, "cannot tell whether another process holds it: %v", err)
	} else if how != "" {
		r.Add("lock", check.OK, "in use: %s", how)
	} else {
		r.Add("lock", check.OK, "no other process holds it")
	}
	if !integrityOK || !schemaOK || !documentsOK || writeErr != nil {
		return r, nil
	}
	db.Close() // the store checks the file itself; do not pin a read snapshot
	st, err := Open(ctx, path, storeOpts...)
	if err != nil {
		r.Add("store", check.Fail, "open %s: %v", path, err)
		return r, nil
	}
	defer st.Close()
	if err := st.HealthCheck(ctx); err != nil {
		r.Add("store", check.Fail, "health check: %v", err)
	} else {
		r.Add("store", check.OK, "opens and answers reads and writes")
	}
	r.Audit(ctx, st.Audit())
	r.TenantAudits(ctx, st)
	r.SearchIndex(ctx, st)
	return r, nil
}

// integrityCheck adds the "integrity" result of integrity_check (or
// quick_check), naming the first problems it lists.
func integrityCheck(ctx context.Context, db *sql.DB, quick bool, r *check.Report) bool {
	name := "integrity_check"
	if quick {
		name = "quick_check"
	}
	problems, err := integrityProblems(ctx, db, name, 20)
	switch {
	case err != nil:
		r.Add("integrity", check.Fail, "%v", err)
		return false
	case len(problems) > 0:
		r.Add("integrity", check.Fail, "%d %s: %s", len(problems), humanize.Plural(len(problems), "problem", "problems"),
			strings.Join(problems[:min(3, len(problems))], "; "))
		return false
	}
	r.Add("integrity", check.OK, "%s ok", name)
	return true
}

// integrityProblems runs PRAGMA pragma(limit) (integrity_check or
// quick_check) and returns the problems it lists (none: the database is
// sound).
func integrityProblems(ctx context.Context, q Queryer, pragma string, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, fmt.Sprintf("PRAGMA %s(%d)", pragma, limit))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, mapErr(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	return problems, mapErr(rows.Err())
}

// foreignKeyCheck adds the "foreign_keys" result: rows whose parent row
// is missing.
func foreignKeyCheck(ctx context.Context, db *sql.DB, r *check.Report) {
	rows, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		r.Add("foreign_keys", check.Fail, "%v", mapErr(err))
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
			r.Add("foreign_keys", check.Fail, "%v", mapErr(err))
			return
		}
		if n == 0 {
			first = fmt.Sprintf("a row of %s refers to a missing row of %s", humanize.Escape(table), humanize.Escape(parent))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		r.Add("foreign_keys", check.Fail, "%v", mapErr(err))
		return
	}
	if n > 0 {
		r.Add("foreign_keys", check.Fail, "%d %s violate foreign keys (%s)", n, humanize.Plural(n, "row", "rows"), first)
		return
	}
	r.Add("foreign_keys", check.OK, "no violations")
}

// CheckIntact is the check to run before a tool rewrites the existing
// database at path (gc, cleanup): SQLite's quick_check and the documents
// check (see check.Documents). A damaged database is a
// *check.DamagedError (matching store.ErrCorrupt); nothing is changed
// either way.
func CheckIntact(ctx context.Context, path string) error {
	db, err := OpenInspect(path)
	if err != nil {
		return err
	}
	defer db.Close()
	problems, err := integrityProblems(ctx, db, "quick_check", 3)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return &check.DamagedError{Why: "quick_check: " + strings.Join(problems, "; ")}
	}
	tables, err := TablesOf(ctx, db)
	if err != nil {
		return err
	}
	d, err := check.Documents(ctx, rowSource{db}, tables, false)
	if err != nil {
		return err
	}
	return check.DamagedDocuments(d)
}

// rowSource is a check.RowSource on a SQLite connection.
type rowSource struct{ q Queryer }

// EachRow runs query and calls fn with each row's columns.
func (s rowSource) EachRow(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error {
	rows, err := s.q.QueryContext(ctx, query)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	cols := make([][]byte, ncols)
	dest := make([]any, ncols)
	for i := range cols {
		dest[i] = &cols[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return mapErr(err)
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// modesCheck adds the "modes" result: the permission bits of each file of
// the database (see Files) that exists; a file every user may write is a
// warning (any process could damage the store).
func modesCheck(path string, r *check.Report) {
	var parts, open []string
	for _, f := range Files(path) {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		name := strings.TrimPrefix(f, path)
		if name == "" {
			name = filepath.Base(path)
		}
		parts = append(parts, fmt.Sprintf("%s %04o", humanize.Escape(name), fi.Mode().Perm()))
		if fi.Mode().Perm()&0o002 != 0 {
			open = append(open, humanize.Escape(name))
		}
	}
	if len(open) > 0 {
		r.Add("modes", check.Warn, "every user may write %s: chmod o-w (%s)", strings.Join(open, ", "), strings.Join(parts, ", "))
		return
	}
	r.Add("modes", check.OK, "%s", strings.Join(parts, ", "))
}
