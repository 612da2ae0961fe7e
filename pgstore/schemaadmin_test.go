package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// schemaExists reports whether the test server has a schema called name.
func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var n int
	err := adminPool(t).QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func randomSchemaName() string {
	var b [6]byte
	rand.Read(b[:])
	return "admin_test_" + hex.EncodeToString(b[:])
}

// TestCreateDropSchema: a created schema holds a working store, a second
// create is a conflict, the drop removes it with its tables, and a second
// drop is not found.
func TestCreateDropSchema(t *testing.T) {
	ctx := context.Background()
	u := serverURL(t)
	name := randomSchemaName()
	if err := pgstore.CreateSchema(ctx, u, name); err != nil {
		t.Fatalf("CreateSchema: %v", err)
	}
	t.Cleanup(func() { pgstore.DropSchema(context.Background(), u, name) })
	if !schemaExists(t, name) {
		t.Fatal("schema not created")
	}
	if err := pgstore.CreateSchema(ctx, u, name); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second CreateSchema: %v, want ErrConflict", err)
	}
	loc, err := pgstore.SetConnParams(u, map[string]string{"search_path": name})
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.Open(ctx, loc)
	if err != nil {
		t.Fatalf("Open in the new schema: %v", err)
	}
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "g", AgentID: "a", CallBudget: 1}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var tables int
	if err := adminPool(t).QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, name).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("the store's tables are not in the new schema: %d (%v)", tables, err)
	}
	if err := pgstore.DropSchema(ctx, u, name); err != nil {
		t.Fatalf("DropSchema: %v", err)
	}
	if schemaExists(t, name) {
		t.Fatal("schema still there after DropSchema")
	}
	if err := pgstore.DropSchema(ctx, u, name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DropSchema: %v, want ErrNotFound", err)
	}
}

// TestCreateSchemaBadName: a name that is not a plain lower-case
// identifier is invalid input and creates nothing.
func TestCreateSchemaBadName(t *testing.T) {
	ctx := context.Background()
	u := serverURL(t)
	count := func() int {
		var n int
		if err := adminPool(t).QueryRow(ctx, `SELECT count(*) FROM pg_namespace`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'a'
	}
	for _, name := range []string{"", "Upper", "9lives", "pg_mine", "a-b", `x"; DROP SCHEMA public; --`, "a b", string(long), "é"} {
		if err := pgstore.CreateSchema(ctx, u, name); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("CreateSchema(%q): %v, want ErrInvalidInput", name, err)
		}
		if err := pgstore.DropSchema(ctx, u, name); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("DropSchema(%q): %v, want ErrInvalidInput", name, err)
		}
	}
	if after := count(); after != before {
		t.Fatalf("%d schemas before, %d after", before, after)
	}
	if !schemaExists(t, "public") {
		t.Fatal("public schema is gone")
	}
	if err := pgstore.CreateSchema(ctx, "", "ok_name"); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("empty url: %v, want ErrInvalidInput", err)
	}
	if err := pgstore.CreateSchema(ctx, "postgres://[::1", "ok_name"); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("bad url: %v, want ErrInvalidInput", err)
	}
}

// TestSetConnParams: parameters set on either form of connection string
// reach the parsed configuration, replacing earlier values, with quoting
// in key=value form; a bad name is invalid input.
func TestSetConnParams(t *testing.T) {
	params := map[string]string{"search_path": "s1", "synchronous_commit": "off", "application_name": "it's a test", "pool_max_conns": "7"}
	for _, conn := range []string{
		"postgres://u@localhost:5432/db?search_path=old&application_name=x",
		"host=localhost user=u dbname=db search_path=old application_name=x",
	} {
		got, err := pgstore.SetConnParams(conn, params)
		if err != nil {
			t.Fatalf("%s: %v", conn, err)
		}
		pc, err := pgxpool.ParseConfig(got)
		if err != nil {
			t.Fatalf("%s → %s: %v", conn, got, err)
		}
		rp := pc.ConnConfig.RuntimeParams
		if rp["search_path"] != "s1" || rp["synchronous_commit"] != "off" || rp["application_name"] != "it's a test" || pc.MaxConns != 7 {
			t.Fatalf("%s → %s: params %v, max conns %d", conn, got, rp, pc.MaxConns)
		}
		if pc.ConnConfig.Database != "db" || pc.ConnConfig.User != "u" {
			t.Fatalf("%s → %s: lost database or user", conn, got)
		}
	}
	for _, bad := range []string{"", "a b", "x=y", "a;b"} {
		if _, err := pgstore.SetConnParams("postgres://localhost/db", map[string]string{bad: "v"}); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("name %q: %v, want ErrInvalidInput", bad, err)
		}
	}
}
