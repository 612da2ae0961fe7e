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
	create string        // CREATE DATABASE %s like the test database
	prefix string        // the names of this process's databases
	err    error
	wg     sync.WaitGroup // drops under way

	mu        sync.Mutex
	templates map[string]*template // by schema name and "+" for migrated
}

// A template is one template database, built at its first use.
type template struct {
	once sync.Once
	name string
	err  error
}

// setup connects to the server once per process.
func setup(t testing.TB) {
	t.Helper()
	u := ServerURL(t)
	tmpl.once.Do(func() { tmpl.err = connect(context.Background(), u) })
	if tmpl.err != nil {
		t.Fatalf("template database: %v", tmpl.err)
	}
}

// connect makes the admin pools and reads the test database's encoding
// and collation.
func connect(ctx context.Context, u string) error {
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return err
	}
	create, err := createLike(ctx, pool)
	if err != nil {
		pool.Close()
		return err
	}
	dc, err := pgxpool.ParseConfig(u)
	if err != nil {
		pool.Close()
		return err
	}
	dc.MaxConns = 2
	drops, err := pgxpool.NewWithConfig(ctx, dc)
	if err != nil {
		pool.Close()
		return err
	}
	tmpl.pool, tmpl.drops, tmpl.create = pool, drops, create
	tmpl.prefix = randomName("t")[:9] + "_"
	tmpl.templates = map[string]*template{}
	return nil
}

// templateFor returns the name of the template database holding schema
// (empty, or with a migrated store when migrated), building it at its
// first use. A store's schema name is part of it (a function or two keep
// the search_path they were migrated with), so a migrated template serves
// only clones that use the same schema name.
func templateFor(t testing.TB, schema string, migrated bool) string {
	t.Helper()
	setup(t)
	key := schema
	if migrated {
		key += "+"
	}
	tmpl.mu.Lock()
	tp := tmpl.templates[key]
	if tp == nil {
		tp = &template{}
		tmpl.templates[key] = tp
	}
	tmpl.mu.Unlock()
	tp.once.Do(func() { tp.name, tp.err = buildTemplate(context.Background(), ServerURL(t), schema, migrated) })
	if tp.err != nil {
		t.Fatalf("template database: %v", tp.err)
	}
	return tp.name
}

// clone makes database db from template src. The clones of one template
// may be made concurrently: CREATE DATABASE only refuses a template that
// has sessions of its own, and nothing connects to a template once it is
// built.
func clone(db, src string) error {
	_, err := tmpl.pool.Exec(context.Background(), "CREATE DATABASE "+db+" TEMPLATE "+src)
	return err
}

// dropLater drops database db in the background. DROP DATABASE waits until
// every backend of the server has released its files (PostgreSQL 15's
// barrier), which a test's blocked backend can hold up for a while: the
// drop goes on on connections of its own, so that neither the test nor
// the next clone waits for it, and DropTemplate drops what is left.
func dropLater(db string) {
	tmpl.wg.Add(1)
	go func() {
		defer tmpl.wg.Done()
		tmpl.drops.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	}()
}

// NewStore returns the URL of a fresh database holding an empty, migrated
// session store in schema TemplateSchema (the URL's search_path): a clone
// of the process's template database. The database is dropped when t ends
// (forcibly: connections a test left open are ended), in the background,
// and DropTemplate drops any clone still left.
func NewStore(t testing.TB) string {
	t.Helper()
	src := templateFor(t, TemplateSchema, true)
	db := randomName(tmpl.prefix)
	if err := clone(db, src); err != nil {
		t.Fatalf("clone the template database: %v", err)
	}
	t.Cleanup(func() { dropLater(db) })
	out, err := withDatabase(ServerURL(t), db, TemplateSchema)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	return out
}

// DropTemplate waits for the background drops, then drops every database
// of this process left (clones and templates), if it made any. TestMain
// calls it when the tests are done; on the throwaway server of
// scripts/with-postgres.sh they would go with the server anyway.
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
	tmpl.drops.Close()
	tmpl.pool.Close()
}

// buildTemplate creates a template database beside the server's test
// database, with its encoding and collation, holding schema: empty, or
// with a store migrated into it by pgstore.Open when migrated.
func buildTemplate(ctx context.Context, u, schema string, migrated bool) (string, error) {
	name := randomName(tmpl.prefix + "tmpl_")
	if _, err := tmpl.pool.Exec(ctx, fmt.Sprintf(tmpl.create, name)); err != nil {
		return "", fmt.Errorf("create the template database: %w", err)
	}
	fail := func(err error) (string, error) {
		tmpl.pool.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return "", err
	}
	tu, err := withDatabase(u, name, "")
	if err != nil {
		return fail(err)
	}
	conn, err := pgx.Connect(ctx, tu)
	if err != nil {
		return fail(err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	conn.Close(ctx)
	if err != nil {
		return fail(err)
	}
	if !migrated {
		return name, nil
	}
	su, err := withDatabase(u, name, schema)
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
	return name, nil
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

// Seedable is a fresh database whose search_path names an empty schema:
// what a test of a command on an empty schema needs. When the test's first
// step would build a store in that schema anyway (a create command, a
// fixture written through the library), Seed swaps in a database cloned
// from a template with a migrated store in a schema of the same name, in a
// few tens of milliseconds, under the same database name.
type Seedable struct {
	// URL is the connection string: the database, with the empty schema
	// as its search_path.
	URL    string
	db     string
	schema string
}

// NewSeedable returns a fresh database (dropped when t ends) with an empty
// schema called schema. Every Seedable of a process with one schema name
// shares its templates.
func NewSeedable(t testing.TB, schema string) *Seedable {
	t.Helper()
	src := templateFor(t, schema, false)
	s := &Seedable{db: randomName(tmpl.prefix), schema: schema}
	if err := clone(s.db, src); err != nil {
		t.Fatalf("clone the template database: %v", err)
	}
	t.Cleanup(func() {
		for _, db := range []string{s.db, s.db + "_e", s.db + "_m"} {
			dropLater(db)
		}
	})
	u, err := withDatabase(ServerURL(t), s.db, schema)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	s.URL = u
	return s
}

// Seed swaps a clone of the migrated template in for the database when its
// schema still holds no relation, and reports whether it did. The empty
// database stays aside (for Unseed) until the test ends.
func (s *Seedable) Seed(t testing.TB) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1`, s.schema).Scan(&n)
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if n != 0 {
		return false
	}
	src := templateFor(t, s.schema, true)
	if err := clone(s.db+"_m", src); err != nil {
		t.Fatalf("seed: %v", err)
	}
	s.swap(t, s.db+"_e", s.db+"_m")
	return true
}

// Unseed undoes Seed: the empty database is back under the name.
func (s *Seedable) Unseed(t testing.TB) {
	t.Helper()
	s.swap(t, s.db+"_m", s.db+"_e")
}

// swap renames the database to aside and in to the database's name.
// ALTER DATABASE ... RENAME waits (up to 5 s) for the sessions of a
// closed connection to end.
func (s *Seedable) swap(t testing.TB, aside, in string) {
	t.Helper()
	ctx := context.Background()
	if _, err := tmpl.pool.Exec(ctx, "ALTER DATABASE "+s.db+" RENAME TO "+aside); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if _, err := tmpl.pool.Exec(ctx, "ALTER DATABASE "+in+" RENAME TO "+s.db); err != nil {
		t.Fatalf("seed: %v", err)
	}
}
