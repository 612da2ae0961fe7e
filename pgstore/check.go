package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/migrations"
)

const invalidIndexesSQL = `SELECT count(*), coalesce(min(ic.relname::text), '')
	FROM pg_catalog.pg_index i
	JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
	WHERE ic.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
	AND NOT (i.indisvalid AND i.indisready)`

const connectionsSQL = `SELECT (SELECT count(*) FROM pg_catalog.pg_stat_activity),
	current_setting('max_connections')::bigint`

// Check runs every check of the store at url, without changing it, and
// returns their results in order: "server" (the connection, server
// version, database and schema), "encoding" (UTF8), "connections" (in use
// against max_connections), "schema" (the version against this binary),
// "tables" (every facet's tables, see check.Report.Tables), "documents"
// (every stored document decodes), "write" (not a standby or a read-only
// session, and the privileges to change every table), "indexes" (none
// invalid), "constraints" (every foreign key validated), "foreign_keys"
// (no row refers to a missing parent row; opts.Quick skips the scan), and
// then "store" (it opens with storeOpts and answers, see HealthCheck) and
// "audit" (every audit chain verifies) and "search_index" (the search index agrees with the content). A schema older than this binary is
// not opened (opening would migrate it). A check that makes the next ones
// meaningless ends the list.
//
// Everything found is in the report, a connection that fails included;
// the error is reserved for a context that ended.
func Check(ctx context.Context, url string, opts check.Options, storeOpts ...Option) (check.Report, error) {
	var r check.Report
	conn, err := Connect(ctx, url)
	if err != nil {
		r.Add("server", check.Fail, "%v", err)
		return r, ctx.Err()
	}
	defer conn.Close(context.WithoutCancel(ctx))
	p, err := readInfo(ctx, conn)
	if err != nil {
		r.Add("server", check.Fail, "%v", err)
		return r, ctx.Err()
	}
	if p.Schema == "" {
		r.Add("server", check.Fail, "PostgreSQL %s, database %s: the search_path names no existing schema", p.Server, p.Database)
		return r, nil
	}
	r.Add("server", check.OK, "PostgreSQL %s, database %s, schema %s", p.Server, p.Database, humanize.Escape(p.Schema))
	if p.Encoding != "UTF8" {
		r.Add("encoding", check.Fail, "server_encoding is %s; the store needs UTF8", p.Encoding)
	} else {
		r.Add("encoding", check.OK, "UTF8")
	}

	var used, maxConns int64
	if err := conn.QueryRow(ctx, connectionsSQL).Scan(&used, &maxConns); err != nil {
		r.Add("connections", check.Fail, "%v", err)
	} else if used*10 >= maxConns*9 {
		r.Add("connections", check.Warn, "%d of max_connections %d in use: new connections may be refused", used, maxConns)
	} else {
		r.Add("connections", check.OK, "%d of max_connections %d in use", used, maxConns)
	}

	schemaOK, current := false, p.Version
	latest, err := migrations.LatestPostgres()
	switch {
	case err != nil:
		r.Add("schema", check.Fail, "%v", err)
	case !p.HasStore:
		r.Add("schema", check.Fail, "not a session store: no %s table in schema %s (create one with sessionctl migrate up)",
			migrations.TableName, humanize.Escape(p.Schema))
		return r, nil
	default:
		schemaOK = r.Schema(current, latest) <= 0
	}
	if current <= latest {
		tables, err := schemaTables(ctx, conn)
		if err != nil {
			r.Add("tables", check.Fail, "%v", err)
		} else {
			if !r.Tables(tables, current) {
				schemaOK = false
			}
			if !r.Documents(ctx, rowSource{conn}, tables, true) {
				schemaOK = false
			}
		}
		if !writeCheck(ctx, conn, tables, &r) {
			schemaOK = false
		}
	}

	var invalid int64
	var firstIndex string
	if err := conn.QueryRow(ctx, invalidIndexesSQL).Scan(&invalid, &firstIndex); err != nil {
		r.Add("indexes", check.Fail, "%v", err)
	} else if invalid > 0 {
		r.Add("indexes", check.Fail, "%d invalid %s (%s...): rebuild with REINDEX", invalid,
			humanize.Plural(invalid, "index", "indexes"), humanize.Escape(firstIndex))
	} else {
		r.Add("indexes", check.OK, "all valid")
	}
	foreignKeyCheck(ctx, conn, p.Schema, opts.Quick, &r)

	switch {
	case !schemaOK:
	case current < latest:
		// Opening the store would migrate it: Check changes nothing.
		r.Add("store", check.Warn, "not opened: it would migrate the schema (run sessionctl migrate up)")
	default:
		st, err := Open(ctx, url, storeOpts...)
		if err != nil {
			r.Add("store", check.Fail, "open %s: %v", Redact(url), err)
			return r, ctx.Err()
		}
		defer st.Close()
		if err := st.HealthCheck(ctx); err != nil {
			r.Add("store", check.Fail, "health check: %v", err)
		} else {
			r.Add("store", check.OK, "opens and answers")
		}
		r.Audit(ctx, st.Audit())
		r.TenantAudits(ctx, st)
		r.SearchIndex(ctx, st)
	}
	return r, ctx.Err()
}

// writeCheck adds the "write" result: the server is not a standby, the
// session's transactions are not read-only, and the role may insert,
// update and delete in every table of the store. It reports whether the
// session can write.
func writeCheck(ctx context.Context, conn *pgx.Conn, tables []string, r *check.Report) bool {
	var recovery bool
	var readOnly string
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only')`).Scan(&recovery, &readOnly); err != nil {
		r.Add("write", check.Fail, "%v", err)
		return false
	}
	switch {
	case recovery:
		r.Add("write", check.Fail, "the database cannot be written: the server is a read-only standby (in recovery)")
		return false
	case readOnly == "on":
		r.Add("write", check.Fail, "the database cannot be written: default_transaction_read_only is on for this session")
		return false
	}
	var denied []string
	for _, t := range tables {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT has_table_privilege(r, 'INSERT') AND has_table_privilege(r, 'UPDATE') AND has_table_privilege(r, 'DELETE')
			FROM (SELECT format('%I.%I', current_schema(), $1::text) AS r) AS t`, t).Scan(&ok)
		if err != nil {
			r.Add("write", check.Fail, "%v", err)
			return false
		}
		if !ok {
			denied = append(denied, humanize.Escape(t))
		}
	}
	if len(denied) > 0 {
		r.Add("write", check.Fail, "the database cannot be written: the role may not change %s", strings.Join(denied, ", "))
		return false
	}
	r.Add("write", check.OK, "the session may write every table of the store")
	return true
}

// foreignKey is one foreign-key constraint of the store's schema.
type foreignKey struct {
	name          string
	child, parent string
	childCols     []string
	parentCols    []string
}

const foreignKeysSQL = `SELECT c.conname, cr.relname, pr.relname,
	array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i),
	array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i),
	c.convalidated
	FROM pg_catalog.pg_constraint c
	JOIN pg_catalog.pg_class cr ON cr.oid = c.conrelid
	JOIN pg_catalog.pg_class pr ON pr.oid = c.confrelid
	WHERE c.contype = 'f'
	AND c.connamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
	ORDER BY cr.relname, c.conname`

// orphanSQL counts the rows of the child table whose (non-null) key has no
// parent row: what PRAGMA foreign_key_check finds on SQLite. On PostgreSQL
// there are none unless the constraint's triggers were bypassed
// (session_replication_role = replica, DISABLE TRIGGER) or the constraint
// was added NOT VALID.
func (fk foreignKey) orphanSQL(schema string) string {
	var notNull, match []string
	for i := range fk.childCols {
		c := "c." + pgx.Identifier{fk.childCols[i]}.Sanitize()
		notNull = append(notNull, c+" IS NOT NULL")
		match = append(match, "p."+pgx.Identifier{fk.parentCols[i]}.Sanitize()+" = "+c)
	}
	return "SELECT count(*) FROM " + pgx.Identifier{schema, fk.child}.Sanitize() + " c WHERE " +
		strings.Join(notNull, " AND ") + " AND NOT EXISTS (SELECT 1 FROM " +
		pgx.Identifier{schema, fk.parent}.Sanitize() + " p WHERE " + strings.Join(match, " AND ") + ")"
}

// foreignKeyCheck adds the "constraints" result (foreign keys that are
// not validated) and the "foreign_keys" result (unless quick, rows whose
// parent row is missing).
func foreignKeyCheck(ctx context.Context, conn *pgx.Conn, schema string, quick bool, r *check.Report) {
	rows, err := conn.Query(ctx, foreignKeysSQL)
	if err != nil {
		r.Add("foreign_keys", check.Fail, "%v", err)
		return
	}
	var fks []foreignKey
	var unvalidated []string
	for rows.Next() {
		var fk foreignKey
		var valid bool
		if err := rows.Scan(&fk.name, &fk.child, &fk.parent, &fk.childCols, &fk.parentCols, &valid); err != nil {
			rows.Close()
			r.Add("foreign_keys", check.Fail, "%v", err)
			return
		}
		if !valid {
			unvalidated = append(unvalidated, humanize.Escape(fk.name))
		}
		fks = append(fks, fk)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		r.Add("foreign_keys", check.Fail, "%v", err)
		return
	}
	if len(fks) == 0 {
		r.Add("foreign_keys", check.Fail, "no foreign keys in schema %s: the store's tables are incomplete", humanize.Escape(schema))
		return
	}
	if len(unvalidated) > 0 {
		r.Add("constraints", check.Fail, "%d foreign %s not validated: %s", len(unvalidated),
			humanize.Plural(len(unvalidated), "key", "keys"), strings.Join(unvalidated, ", "))
	} else {
		r.Add("constraints", check.OK, "%d foreign keys, all validated", len(fks))
	}
	if quick {
		r.Add("foreign_keys", check.OK, "orphan-row scan skipped (--quick)")
		return
	}
	var n int64
	var first string
	for _, fk := range fks {
		var c int64
		if err := conn.QueryRow(ctx, fk.orphanSQL(schema)).Scan(&c); err != nil {
			r.Add("foreign_keys", check.Fail, "%s: %v", humanize.Escape(fk.name), err)
			return
		}
		if c > 0 && n == 0 {
			first = fmt.Sprintf("a row of %s refers to a missing row of %s", humanize.Escape(fk.child), humanize.Escape(fk.parent))
		}
		n += c
	}
	if n > 0 {
		r.Add("foreign_keys", check.Fail, "%d %s violate foreign keys (%s)", n, humanize.Plural(n, "row", "rows"), first)
		return
	}
	r.Add("foreign_keys", check.OK, "no orphan rows (%d foreign keys scanned)", len(fks))
}

// CheckIntact is the check to run before a tool rewrites the store at url
// (gc, cleanup): the documents check (see check.Documents). Damaged
// documents are a *check.DamagedError (matching store.ErrCorrupt); nothing
// is changed either way.
func CheckIntact(ctx context.Context, url string) error {
	conn, err := Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tables, err := schemaTables(ctx, conn)
	if err != nil {
		return err
	}
	d, err := check.Documents(ctx, rowSource{conn}, tables, true)
	if err != nil {
		return err
	}
	return check.DamagedDocuments(d)
}
