package main

// The places where sessionctl talks to PostgreSQL itself: whether a schema
// holds a session store (without creating one), the checks of doctor, the
// sizes of stats. The store lives in the first existing schema of the
// connection's search_path (public unless the URL sets search_path).

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// pgConnect opens one connection to --db for sessionctl's own queries.
func (g *globals) pgConnect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(g.db)
	if err != nil {
		// pgx redacts passwords in its parse errors.
		return nil, fmt.Errorf("%w: %w", store.Invalid("db", "not a valid PostgreSQL URL"), err)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "sessionctl"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", g.dbName(), err)
	}
	return conn, nil
}

// pgInfo describes the store's schema on a PostgreSQL server.
type pgInfo struct {
	database string
	schema   string // "" when the search_path names no existing schema
	server   string // server version
	encoding string
	hasStore bool  // the schema has the store's migration table
	version  int64 // applied schema version (0 without a store)
}

// pgProbe reads pgInfo on a connection of its own.
func (g *globals) pgProbe(ctx context.Context) (pgInfo, error) {
	conn, err := g.pgConnect(ctx)
	if err != nil {
		return pgInfo{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgReadInfo(ctx, conn)
}

const pgInfoSQL = `SELECT current_database(), coalesce(current_schema(), ''),
	current_setting('server_version'), current_setting('server_encoding'),
	EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1)`

func pgReadInfo(ctx context.Context, conn *pgx.Conn) (pgInfo, error) {
	var p pgInfo
	err := conn.QueryRow(ctx, pgInfoSQL, migrations.TableName).Scan(&p.database, &p.schema, &p.server, &p.encoding, &p.hasStore)
	if err != nil || !p.hasStore {
		return p, err
	}
	q := "SELECT coalesce(max(version_id), 0) FROM " + pgx.Identifier{p.schema, migrations.TableName}.Sanitize() + " WHERE is_applied"
	err = conn.QueryRow(ctx, q).Scan(&p.version)
	return p, err
}

// pgSizes are the sizes stats reports for PostgreSQL.
type pgSizes struct {
	database int64 // pg_database_size of the whole database
	schema   int64 // the store's tables with their indexes and TOAST
}

const pgSizesSQL = `SELECT pg_database_size(current_database()),
	coalesce((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_catalog.pg_class c
		WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
		AND c.relkind IN ('r', 'p')), 0)::bigint`

func (g *globals) pgSizes(ctx context.Context) (pgSizes, error) {
	conn, err := g.pgConnect(ctx)
	if err != nil {
		return pgSizes{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s pgSizes
	err = conn.QueryRow(ctx, pgSizesSQL).Scan(&s.database, &s.schema)
	return s, err
}

// pgForeignKey is one foreign-key constraint of the store's schema.
type pgForeignKey struct {
	name          string
	child, parent string
	childCols     []string
	parentCols    []string
}

const pgForeignKeysSQL = `SELECT c.conname, cr.relname, pr.relname,
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
func (fk pgForeignKey) orphanSQL(schema string) string {
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

// pgForeignKeyCheck reports foreign keys that are not validated and, unless
// quick, rows whose parent row is missing.
func pgForeignKeyCheck(ctx context.Context, conn *pgx.Conn, schema string, quick bool, add func(name, status, format string, args ...any)) {
	rows, err := conn.Query(ctx, pgForeignKeysSQL)
	if err != nil {
		add("foreign_keys", checkFail, "%v", err)
		return
	}
	var fks []pgForeignKey
	var unvalidated []string
	for rows.Next() {
		var fk pgForeignKey
		var valid bool
		if err := rows.Scan(&fk.name, &fk.child, &fk.parent, &fk.childCols, &fk.parentCols, &valid); err != nil {
			rows.Close()
			add("foreign_keys", checkFail, "%v", err)
			return
		}
		if !valid {
			unvalidated = append(unvalidated, fk.name)
		}
		fks = append(fks, fk)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		add("foreign_keys", checkFail, "%v", err)
		return
	}
	if len(fks) == 0 {
		add("foreign_keys", checkFail, "no foreign keys in schema %s: the store's tables are incomplete", schema)
		return
	}
	if len(unvalidated) > 0 {
		add("constraints", checkFail, "%d foreign %s not validated: %s", len(unvalidated), plural(len(unvalidated), "key", "keys"), strings.Join(unvalidated, ", "))
	} else {
		add("constraints", checkOK, "%d foreign keys, all validated", len(fks))
	}
	if quick {
		add("foreign_keys", checkOK, "orphan-row scan skipped (--quick)")
		return
	}
	var n int64
	var first string
	for _, fk := range fks {
		var c int64
		if err := conn.QueryRow(ctx, fk.orphanSQL(schema)).Scan(&c); err != nil {
			add("foreign_keys", checkFail, "%s: %v", fk.name, err)
			return
		}
		if c > 0 && n == 0 {
			first = fmt.Sprintf("a row of %s refers to a missing row of %s", fk.child, fk.parent)
		}
		n += c
	}
	if n > 0 {
		add("foreign_keys", checkFail, "%d %s violate foreign keys (%s)", n, plural(int(n), "row", "rows"), first)
		return
	}
	add("foreign_keys", checkOK, "no orphan rows (%d foreign keys scanned)", len(fks))
}

// pgTablesSQL lists the tables of the store's schema.
const pgTablesSQL = `SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`

const pgInvalidIndexesSQL = `SELECT count(*), coalesce(min(ic.relname::text), '')
	FROM pg_catalog.pg_index i
	JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
	WHERE ic.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
	AND NOT (i.indisvalid AND i.indisready)`

const pgConnectionsSQL = `SELECT (SELECT count(*) FROM pg_catalog.pg_stat_activity),
	current_setting('max_connections')::bigint`

// diagnosePG runs doctor's checks on PostgreSQL; a check that makes the
// next ones meaningless stops the list. It changes nothing.
func diagnosePG(ctx context.Context, g *globals, quick bool) []checkJSON {
	var checks []checkJSON
	add := func(name, status, format string, args ...any) {
		checks = append(checks, checkJSON{Name: name, Status: status, Detail: oneLine(fmt.Sprintf(format, args...))})
	}
	conn, err := g.pgConnect(ctx)
	if err != nil {
		add("server", checkFail, "%v", err)
		return checks
	}
	defer conn.Close(context.WithoutCancel(ctx))
	p, err := pgReadInfo(ctx, conn)
	if err != nil {
		add("server", checkFail, "%v", err)
		return checks
	}
	if p.schema == "" {
		add("server", checkFail, "PostgreSQL %s, database %s: the search_path names no existing schema", p.server, p.database)
		return checks
	}
	add("server", checkOK, "PostgreSQL %s, database %s, schema %s", p.server, p.database, p.schema)
	if p.encoding != "UTF8" {
		add("encoding", checkFail, "server_encoding is %s; the store needs UTF8", p.encoding)
	} else {
		add("encoding", checkOK, "UTF8")
	}

	var used, maxConns int64
	if err := conn.QueryRow(ctx, pgConnectionsSQL).Scan(&used, &maxConns); err != nil {
		add("connections", checkFail, "%v", err)
	} else if used*10 >= maxConns*9 {
		add("connections", checkWarn, "%d of max_connections %d in use: new connections may be refused", used, maxConns)
	} else {
		add("connections", checkOK, "%d of max_connections %d in use", used, maxConns)
	}

	schemaOK, current := false, p.version
	latest, err := migrations.LatestPostgres()
	switch {
	case err != nil:
		add("schema", checkFail, "%v", err)
	case !p.hasStore:
		add("schema", checkFail, "not a session store: no %s table in schema %s (create one with sessionctl migrate up)", migrations.TableName, p.schema)
		return checks
	case current > latest:
		add("schema", checkFail, "version %d is newer than this binary (%d): use a newer sessionctl", current, latest)
	case current < latest:
		schemaOK = true
		add("schema", checkWarn, "version %d, this binary has %d: run sessionctl migrate up", current, latest)
	default:
		schemaOK = true
		add("schema", checkOK, "version %d, the same as this binary", current)
	}
	if current <= latest {
		rows, err := conn.Query(ctx, pgTablesSQL)
		var tables []string
		if err == nil {
			tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			add("tables", checkFail, "%v", err)
		} else {
			if !tablesCheck(tables, current, add) {
				schemaOK = false
			}
			if !addDocumentsCheck(ctx, pgRows(conn), true, tables, add) {
				schemaOK = false
			}
		}
		if !pgWriteCheck(ctx, conn, tables, add) {
			schemaOK = false
		}
	}

	var invalid int64
	var firstIndex string
	if err := conn.QueryRow(ctx, pgInvalidIndexesSQL).Scan(&invalid, &firstIndex); err != nil {
		add("indexes", checkFail, "%v", err)
	} else if invalid > 0 {
		add("indexes", checkFail, "%d invalid %s (%s...): rebuild with REINDEX", invalid, plural(int(invalid), "index", "indexes"), firstIndex)
	} else {
		add("indexes", checkOK, "all valid")
	}
	pgForeignKeyCheck(ctx, conn, p.schema, quick, add)

	switch {
	case !schemaOK:
	case current < latest:
		// Opening the store would migrate it: doctor changes nothing.
		add("store", checkWarn, "not opened: it would migrate the schema (run sessionctl migrate up)")
	default:
		st, err := g.openOrCreate(ctx)
		if err != nil {
			add("store", checkFail, "%v", err)
			return checks
		}
		defer st.Close()
		if err := st.HealthCheck(ctx); err != nil {
			add("store", checkFail, "health check: %v", err)
		} else {
			add("store", checkOK, "opens and answers")
		}
		auditCheck(ctx, st, add) // audit.go
	}
	return checks
}

// pgWriteCheck reports whether this session can write the store: the
// server is not a standby, the session's transactions are not read-only,
// and the role may insert, update and delete in every table of the store.
func pgWriteCheck(ctx context.Context, conn *pgx.Conn, tables []string, add func(name, status, format string, args ...any)) bool {
	var recovery bool
	var readOnly string
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only')`).Scan(&recovery, &readOnly); err != nil {
		add("write", checkFail, "%v", err)
		return false
	}
	switch {
	case recovery:
		add("write", checkFail, "the database cannot be written: the server is a read-only standby (in recovery)")
		return false
	case readOnly == "on":
		add("write", checkFail, "the database cannot be written: default_transaction_read_only is on for this session")
		return false
	}
	var denied []string
	for _, t := range tables {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT has_table_privilege(r, 'INSERT') AND has_table_privilege(r, 'UPDATE') AND has_table_privilege(r, 'DELETE')
			FROM (SELECT format('%I.%I', current_schema(), $1::text) AS r) AS t`, t).Scan(&ok)
		if err != nil {
			add("write", checkFail, "%v", err)
			return false
		}
		if !ok {
			denied = append(denied, t)
		}
	}
	if len(denied) > 0 {
		add("write", checkFail, "the database cannot be written: the role may not change %s", strings.Join(denied, ", "))
		return false
	}
	add("write", checkOK, "the session may write every table of the store")
	return true
}
