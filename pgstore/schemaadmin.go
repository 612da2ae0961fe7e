package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/store"
)

// SQLSTATE codes of schema creation and removal.
const (
	codeDuplicateSchema   = "42P06"
	codeInvalidSchemaName = "3F000"
)

// maxIdentifierLen is PostgreSQL's longest identifier (NAMEDATALEN - 1).
const maxIdentifierLen = 63

// CreateSchema creates an empty schema called name in the database at conn
// (a postgres:// URL or a key=value connection string), for a store of
// its own: open it with Open on SetConnParams(conn, {"search_path": name}).
// The name is lower-case letters, digits and underscores, starting with a
// letter or an underscore, at most 63 bytes, and not starting with "pg_"
// (so that the same name works unquoted in search_path); another name is
// store.ErrInvalidInput and creates nothing. A schema that already exists
// is store.ErrConflict (a *store.ConflictError with Resource "schema").
func CreateSchema(ctx context.Context, conn, name string) error {
	if err := validSchemaName(name); err != nil {
		return err
	}
	return onAdminConn(ctx, conn, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
		if pgCode(err) == codeDuplicateSchema {
			return &store.ConflictError{Resource: "schema", ID: name, Reason: "exists"}
		}
		return mapErr(err)
	})
}

// DropSchema removes the schema called name from the database at conn,
// with everything in it (a store's tables and data included): it is the
// undo of CreateSchema, and the name follows the same rules. A schema that
// does not exist is store.ErrNotFound (a *store.NotFoundError with
// Resource "schema").
func DropSchema(ctx context.Context, conn, name string) error {
	if err := validSchemaName(name); err != nil {
		return err
	}
	return onAdminConn(ctx, conn, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
		if pgCode(err) == codeInvalidSchemaName {
			return &store.NotFoundError{Resource: "schema", ID: name}
		}
		return mapErr(err)
	})
}

// validSchemaName checks a schema name for CreateSchema and DropSchema.
func validSchemaName(name string) error {
	switch {
	case name == "":
		return store.Invalid("schema", "must not be empty")
	case len(name) > maxIdentifierLen:
		return store.Invalid("schema", "too long")
	case strings.HasPrefix(name, "pg_"):
		return store.Invalid("schema", "reserved prefix")
	case name[0] >= '0' && name[0] <= '9':
		return store.Invalid("schema", "must not start with a digit")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return store.Invalid("schema", "only lower-case letters, digits and underscores")
		}
	}
	return nil
}

// onAdminConn runs fn on a connection of its own to the database at conn
// (pool settings in conn, such as pool_max_conns, are accepted and unused).
func onAdminConn(ctx context.Context, conn string, fn func(*pgx.Conn) error) error {
	if conn == "" {
		return store.Invalid("url", "must not be empty")
	}
	pc, err := pgxpool.ParseConfig(conn)
	if err != nil {
		// pgx redacts passwords in its parse errors.
		return fmt.Errorf("%w: %w", store.Invalid("url", "not a valid PostgreSQL connection string"), err)
	}
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "sessionstore"
	}
	c, err := pgx.ConnectConfig(ctx, pc.ConnConfig)
	if err != nil {
		return mapErr(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(c)
}

// SetConnParams returns the connection string conn (a postgres:// URL or
// a key=value string) with the given parameters set, replacing any of the
// same name: run-time parameters such as search_path or
// synchronous_commit, or pgx settings such as pool_max_conns. A name is
// letters, digits, underscores and dots; another is store.ErrInvalidInput.
func SetConnParams(conn string, params map[string]string) (string, error) {
	for k := range params {
		if !validParamName(k) {
			return "", store.Invalid("connection parameter", "not a parameter name")
		}
	}
	if IsURL(conn) {
		u, err := url.Parse(conn)
		if err != nil {
			return "", store.Invalid("url", "not a valid PostgreSQL connection string")
		}
		q := u.Query()
		for k, v := range params {
			q.Set(k, v)
		}
		// pgx does not read "+" as a space in a URL's query: spell it %20.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String(), nil
	}
	var b strings.Builder
	b.WriteString(conn)
	for k, v := range params {
		// A later setting of the same name wins in key=value form.
		fmt.Fprintf(&b, " %s=%s", k, quoteConnValue(v))
	}
	return b.String(), nil
}

// validParamName reports whether k can be a connection parameter name.
func validParamName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// quoteConnValue quotes a value of a key=value connection string when it
// is empty or holds a space, a quote or a backslash.
func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
