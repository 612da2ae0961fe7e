package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
)

// Building a store's schema (every migration in migrations/postgres) is the
// dearest step of most PostgreSQL tests: about 0.3 s a schema without the
// race detector and 1 s with it, where cloning a database from a template
// (CREATE DATABASE ... TEMPLATE) takes a few tens of milliseconds whatever
// the detector. Tests that only need a fresh, empty store therefore get a
// database of their own, cloned from one template database built once per
// test process by pgstore.Open itself (in schema TemplateSchema, with the
// test database's encoding and collation); Open on the clone finds the
// schema current and migrates nothing, as on SQLite's copied template file
// (internal/sqltest). Tests about creating, migrating or refusing a schema
// keep NewSchema's empty one.

// TemplateSchema is the schema that holds the store in a database of
// NewStore (the URL's search_path).
const TemplateSchema = "store"

var tmpl struct {
	once   sync.Once
	pool   *pgxpool.Pool // the admin pool on the server's test database
	drops  *pgxpool.Pool // a pool of its own for dropping clones
	name   string        // the template database
	prefix string        // the names of this process's clones
	err    error
	wg     sync.WaitGroup // drops under way
}

// NewStore returns the URL of a fresh database holding an empty, migrated
// session store in schema TemplateSchema (the URL's search_path): a clone
// of the process's template database. The database is dropped when t ends
// (forcibly: connections a test left open are ended), in the background,
// and DropTemplate drops any clone still left.
func NewStore(t testing.TB) string {
	t.Helper()
	u := ServerURL(t)
	ctx := context.Background()
	tmpl.once.Do(func() { tmpl.err = buildTemplate(ctx, u) })
	if tmpl.err != nil {
		t.Fatalf("template database: %v", tmpl.err)
	}
	db := randomName(tmpl.prefix)
	// The clones of one template may be made concurrently: CREATE DATABASE
	// only refuses a template that has sessions of its own, and nothing
	// connects to the template once it is built.
	if _, err := tmpl.pool.Exec(ctx, "CREATE DATABASE "+db+" TEMPLATE "+tmpl.name); err != nil {
		t.Fatalf("clone the template database: %v", err)
	}
	t.Cleanup(func() {
		// DROP DATABASE waits until every backend of the server has
		// released its files (PostgreSQL 15's barrier), which a test's
		// blocked backend can hold up for a while: the drop goes on in
		// the background, on connections of its own, so that neither this
		// test nor the next clone waits for it.
		tmpl.wg.Add(1)
		go func() {
			defer tmpl.wg.Done()
			tmpl.drops.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}()
	})
	out, err := withDatabase(u, db, TemplateSchema)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	return out
}

// DropTemplate waits for the background drops of the clones, drops every
// clone left and the process's template database, if it built one
// (TestMain calls it when the tests are done; on the throwaway server of
// scripts/with-postgres.sh they would go with the server anyway).
func DropTemplate() {
	if tmpl.pool == nil {
		return
	}
	tmpl.wg.Wait()
	ctx := context.Background()
	rows, err := tmpl.pool.Query(ctx, "SELECT datname FROM pg_catalog.pg_database WHERE starts_with(datname, $1)", tmpl.prefix)
	if err == nil {
		names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, n := range names {
			tmpl.pool.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
		}
	}
	tmpl.pool.Exec(ctx, "DROP DATABASE IF EXISTS "+tmpl.name+" WITH (FORCE)")
	tmpl.drops.Close()
	tmpl.pool.Close()
}

// buildTemplate creates the template database beside the server's test
// database, with its encoding and collation, and migrates a store into it
// through pgstore.Open, and sets tmpl's pools and names.
func buildTemplate(ctx context.Context, u string) error {
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return err
	}
	create, err := createLike(ctx, pool)
	if err != nil {
		pool.Close()
		return err
	}
	name := randomName("tmpl_")
	if _, err := pool.Exec(ctx, fmt.Sprintf(create, name)); err != nil {
		pool.Close()
		return fmt.Errorf("create the template database: %w", err)
	}
	fail := func(err error) error {
		pool.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		pool.Close()
		return err
	}
	tu, err := withDatabase(u, name, "")
	if err != nil {
		return fail(err)
	}
	conn, err := pgx.Connect(ctx, tu)
	if err != nil {
		return fail(err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+TemplateSchema)
	conn.Close(ctx)
	if err != nil {
		return fail(err)
	}
	su, err := withDatabase(u, name, TemplateSchema)
	if err != nil {
		return fail(err)
	}
	st, err := pgstore.Open(ctx, su)
	if err != nil {
		return fail(fmt.Errorf("migrate the template: %w", err))
	}
	if err := st.Close(); err != nil {
		return fail(err)
	}
	dc, err := pgxpool.ParseConfig(u)
	if err != nil {
		return fail(err)
	}
	dc.MaxConns = 2
	drops, err := pgxpool.NewWithConfig(ctx, dc)
	if err != nil {
		return fail(err)
	}
	tmpl.pool, tmpl.drops, tmpl.name = pool, drops, name
	tmpl.prefix = "st_" + strings.TrimPrefix(name, "tmpl_")[:8] + "_"
	return nil
}

// createLike returns a CREATE DATABASE statement (with %s for the name)
// that makes an empty database with the encoding, locale provider and
// collation of the connection's current database: the clones then sort
// text as the tests' own database does (scripts/with-postgres.sh makes it
// an ICU one). The catalog's columns differ between server versions, so
// the row is read as JSON.
func createLike(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var raw []byte
	err := pool.QueryRow(ctx, `SELECT to_jsonb(d) || jsonb_build_object('enc', pg_encoding_to_char(d.encoding))
		FROM pg_database d WHERE d.datname = current_database()`).Scan(&raw)
	if err != nil {
		return "", err
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", err
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	q := "CREATE DATABASE %s TEMPLATE template0 ENCODING " + lit(str("enc"))
	if c := str("datcollate"); c != "" {
		q += " LC_COLLATE " + lit(c)
	}
	if c := str("datctype"); c != "" {
		q += " LC_CTYPE " + lit(c)
	}
	icu := str("daticulocale") // PostgreSQL 15 and 16
	if icu == "" {
		icu = str("datlocale") // 17 and later
	}
	if str("datlocprovider") == "i" && icu != "" {
		q += " LOCALE_PROVIDER icu ICU_LOCALE " + lit(icu)
	}
	return q, nil
}

// withDatabase returns the connection string u (URL or key=value form)
// naming database db and, when schema is not empty, with schema as its
// search_path.
func withDatabase(u, db, schema string) (string, error) {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		pu, err := url.Parse(u)
		if err != nil {
			return "", err
		}
		pu.Path = "/" + db
		pu.RawPath = ""
		q := pu.Query()
		q.Del("dbname")
		if schema != "" {
			q.Set("search_path", schema)
		}
		pu.RawQuery = q.Encode()
		return pu.String(), nil
	}
	out := u + " dbname=" + db
	if schema != "" {
		out += " search_path=" + schema
	}
	return out, nil
}

// randomName returns prefix followed by 16 random hex digits, a name that
// needs no quoting.
func randomName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
