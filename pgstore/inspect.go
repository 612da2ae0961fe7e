package pgstore

// Connections for maintenance past the store: whether a schema holds a
// session store (without creating one), the checks, the sizes. The store
// lives in the first existing schema of the connection's search_path
// (public unless the URL sets search_path).

import (
	"context"
	"fmt"
	neturl "net/url"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// Redact returns url as it may be printed: a URL's password replaced by
// "xxxxx".
func Redact(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return "(unparsable PostgreSQL URL)"
	}
	return u.Redacted()
}

// Connect opens one connection to the database at url for a tool's own
// read-only queries on the store's schema (application_name sessionstore
// unless the URL sets one). The caller closes it.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx redacts passwords in its parse errors.
		return nil, fmt.Errorf("%w: %w", store.Invalid("url", "not a valid PostgreSQL URL"), err)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "sessionstore"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", Redact(url), err)
	}
	return conn, nil
}

// Info describes the store's schema on a PostgreSQL server.
type Info struct {
	Database string
	// Schema is the store's schema: "" when the search_path names no
	// existing schema.
	Schema   string
	Server   string // server version
	Encoding string
	// HasStore reports whether the schema has the store's migration
	// table: the one probe of whether a schema is a session store.
	HasStore bool
	Version  int64 // applied schema version (0 without a store)
}

// Probe reads the Info of the database at url on a connection of its
// own, changing nothing.
func Probe(ctx context.Context, url string) (Info, error) {
	conn, err := Connect(ctx, url)
	if err != nil {
		return Info{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return readInfo(ctx, conn)
}

const infoSQL = `SELECT current_database(), coalesce(current_schema(), ''),
	current_setting('server_version'), current_setting('server_encoding'),
	EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1)`

func readInfo(ctx context.Context, conn *pgx.Conn) (Info, error) {
	var p Info
	err := conn.QueryRow(ctx, infoSQL, migrations.TableName).Scan(&p.Database, &p.Schema, &p.Server, &p.Encoding, &p.HasStore)
	if err != nil || !p.HasStore {
		return p, err
	}
	q := "SELECT coalesce(max(version_id), 0) FROM " + pgx.Identifier{p.Schema, migrations.TableName}.Sanitize() + " WHERE is_applied"
	err = conn.QueryRow(ctx, q).Scan(&p.Version)
	return p, err
}

// Sizes are the sizes of a store on PostgreSQL.
type Sizes struct {
	Database int64 // pg_database_size of the whole database
	Schema   int64 // the store's tables with their indexes and TOAST
}

const sizesSQL = `SELECT pg_database_size(current_database()),
	coalesce((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_catalog.pg_class c
		WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
		AND c.relkind IN ('r', 'p')), 0)::bigint`

// ReadSizes reads the Sizes of the store at url.
func ReadSizes(ctx context.Context, url string) (Sizes, error) {
	conn, err := Connect(ctx, url)
	if err != nil {
		return Sizes{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s Sizes
	err = conn.QueryRow(ctx, sizesSQL).Scan(&s.Database, &s.Schema)
	return s, err
}

// tablesSQL lists the tables of the store's schema.
const tablesSQL = `SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`

func schemaTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, tablesSQL)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// rowSource is a check.RowSource on a PostgreSQL connection.
type rowSource struct{ conn *pgx.Conn }

// EachRow runs query and calls fn with each row's columns.
func (s rowSource) EachRow(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error {
	rows, err := s.conn.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols := make([][]byte, ncols)
	dest := make([]any, ncols)
	for i := range cols {
		dest[i] = &cols[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := fn(cols); err != nil {
			return err
		}
	}
	return rows.Err()
}
