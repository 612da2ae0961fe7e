package pgstore_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// schemaOf returns the search_path schema of a location made by newSchema.
func schemaOf(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}

func open(t *testing.T, loc string) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), loc)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The PostgreSQL schema carries the same version numbers as SQLite's.
func TestSchemaVersionMatchesSQLite(t *testing.T) {
	st := open(t, newSchema(t))
	current, latest, err := st.SchemaVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lite, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if current != latest || latest != lite {
		t.Fatalf("schema version %d, latest %d, SQLite latest %d: want all equal", current, latest, lite)
	}
	if st.Backend() != "postgres" {
		t.Fatalf("Backend() = %q", st.Backend())
	}
	if err := st.HealthCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	open(t, loc).Close()
	schema := schemaOf(t, loc)
	pool := adminPool(t)
	if _, err := pool.Exec(ctx, "INSERT INTO "+schema+".goose_db_version (version_id, is_applied) VALUES (999, true)"); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(ctx, loc)
	var tooNew *store.SchemaTooNewError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &tooNew) || tooNew.DatabaseVersion != 999 {
		t.Fatalf("Open on a newer schema: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".goose_db_version").Scan(&n); err != nil {
		t.Fatal(err)
	}
	versions, _ := migrations.Versions(migrations.Postgres())
	if n != len(versions)+2 { // goose's version 0 row, each migration, and 999
		t.Fatalf("the refused open changed the version table: %d rows", n)
	}
}

func TestRefusesAnotherApplicationsSchema(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	if _, err := adminPool(t).Exec(ctx, "CREATE TABLE "+schemaOf(t, loc)+".invoices (id int)"); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(ctx, loc)
	if !errors.Is(err, store.ErrNotSessionStore) {
		t.Fatalf("Open on a foreign schema: %v", err)
	}
	var n int
	if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schemaOf(t, loc)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the refused open created tables: %d (%v)", n, err)
	}
}

func TestMissingSchemaIsInvalidInput(t *testing.T) {
	loc := newSchema(t)
	loc = strings.Replace(loc, "search_path=storetest_", "search_path=nosuch_", 1)
	_, err := pgstore.Open(context.Background(), loc)
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Open with a search_path naming no schema: %v", err)
	}
}

func TestBadURLIsInvalidInput(t *testing.T) {
	serverURL(t)
	for _, u := range []string{"", "postgres://%zz", "host=/nonexistent port=notaport"} {
		if _, err := pgstore.Open(context.Background(), u); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Open(%q): %v, want ErrInvalidInput", u, err)
		}
	}
}

// Concurrent first opens of one schema: goose's session locker lets one
// migrate; the others wait and find the schema current. Every store works.
func TestConcurrentMigrators(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	const n = 6
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = pgstore.Open(ctx, loc, pgstore.WithMaxConns(2)) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("opener %d: %v", i, errs[i])
		}
		defer stores[i].Close()
	}
	var applied, distinct int
	err := adminPool(t).QueryRow(ctx, "SELECT count(*), count(DISTINCT version_id) FROM "+schemaOf(t, loc)+".goose_db_version WHERE version_id > 0").Scan(&applied, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if applied != distinct {
		t.Fatalf("migrations applied more than once: %d rows for %d versions", applied, distinct)
	}
	s, err := stores[n-1].Governance().Create(ctx, store.CreateRequest{AgentID: "a", CallBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].Governance().Use(ctx, store.UseRequest{SessionID: s.ID, Tools: []string{}}); err != nil {
		t.Fatal(err)
	}
}

// Two stores in two schemas of one database are independent, even with
// the same ids.
func TestSchemasAreIndependent(t *testing.T) {
	ctx := context.Background()
	a, b := open(t, newSchema(t)), open(t, newSchema(t))
	req := store.CreateRequest{ID: "same-id", AgentID: "agent", CallBudget: 1, AuthorizedTools: []string{"t"}}
	if _, err := a.Governance().Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Governance().Create(ctx, req); err != nil {
		t.Fatalf("same id in another schema: %v", err)
	}
	if _, err := a.Governance().Use(ctx, store.UseRequest{SessionID: "same-id", Tools: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Governance().Get(ctx, "same-id"); got.CallsMade != 0 {
		t.Fatalf("a use in one schema counted in the other: %+v", got)
	}
}

func TestClosedStore(t *testing.T) {
	st := open(t, newSchema(t))
	st.Close()
	if _, err := st.Governance().Get(context.Background(), "x"); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := st.HealthCheck(context.Background()); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("HealthCheck after Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://u@h/db":        true,
		"POSTGRESQL://u@h/db":      true,
		"sessions.db":              false,
		"/var/lib/postgres://x.db": false,
		"":                         false,
	} {
		if got := pgstore.IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v", s, got)
		}
	}
}

// A migration tool sees the store's schema: every version applied.
func TestMigrationProvider(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	open(t, loc).Close()
	p, db, pool, err := pgstore.NewMigrationProvider(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	defer db.Close()
	status, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := migrations.LatestPostgres()
	if len(status) != int(latest) {
		t.Fatalf("%d migrations in status, want %d", len(status), latest)
	}
	for _, st := range status {
		if st.State != "applied" {
			t.Fatalf("migration %d is %s", st.Source.Version, st.State)
		}
	}
}
