package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// asRoleOn returns the server's URL with database db and user role.
func asRoleOn(t *testing.T, db, role string) string {
	t.Helper()
	loc, err := withParam(serverURL(t), "dbname", db)
	if err == nil {
		loc, err = withParam(loc, "user", role)
	}
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A role without CREATE on its database cannot create pg_trgm (nor the
// schema migration 42 would put it in): migration 42 leaves the schema
// with sessionstore_trigrams' index, says so in a notice, and the store
// searches with that index.
func TestSearchIndexWithoutExtensionRights(t *testing.T) {
	ctx := context.Background()
	admin := adminPool(t)
	var b [6]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	db, role := "trgm_db_"+suffix, "trgm_role_"+suffix
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"CREATE DATABASE " + db + " TEMPLATE template0",
		"REVOKE CREATE ON DATABASE " + db + " FROM PUBLIC",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP DATABASE " + db + " WITH (FORCE)", "DROP ROLE " + role} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	// The role may create tables in the database's public schema, and
	// nothing else.
	conn, err := pgx.Connect(ctx, asRoleOn(t, db, admin.Config().ConnConfig.User))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "GRANT USAGE, CREATE ON SCHEMA public TO "+role)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	st := open(t, asRoleOn(t, db, role))
	var function, trgm, ext bool
	if err := st.Pool().QueryRow(ctx, `SELECT to_regclass('search_docs_trigrams') IS NOT NULL, to_regclass('search_docs_trgm') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')`).Scan(&function, &trgm, &ext); err != nil {
		t.Fatal(err)
	}
	if !function || trgm || ext {
		t.Fatalf("function index %v, pg_trgm index %v, pg_trgm installed %v: want the function's index alone", function, trgm, ext)
	}

	checkTermSearches(t, st)
}

// On the default store's index (pg_trgm's where the server has it, as
// the test server does) the same searches find the same items.
func TestSearchIndexTrigramExtension(t *testing.T) {
	ctx := context.Background()
	st := open(t, newSchema(t))
	var trgm bool
	if err := st.Pool().QueryRow(ctx, `SELECT to_regclass('search_docs_trgm') IS NOT NULL`).Scan(&trgm); err != nil {
		t.Fatal(err)
	}
	if !trgm {
		t.Fatal("no pg_trgm index: the test server has the extension (Debian's server package ships it)")
	}
	checkTermSearches(t, st)
}

// checkTermSearches appends events whose text holds LIKE's wildcards and
// escape character and searches st for terms that hold them too: the
// LIKE of pg_trgm's match escapes them (a term is never a pattern), and
// case is folded as strpos(lower(...)) folds it, whichever the index.
func checkTermSearches(t *testing.T, st *pgstore.Store) {
	t.Helper()
	ctx := context.Background()
	as := st.AgentSessions()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"the broker's Partition lag", `a reply about 100% of the budget_left in C:\temp\x`, "ﬁle İstanbul ΣΟΦΟΣ"}
	for i, text := range texts {
		data, _ := json.Marshal(map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}})
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: data}}); err != nil {
			t.Fatal(err)
		}
	}
	for term, want := range map[string]int{
		"partition LAG": 1, "100% of": 1, "budget_left": 1, "get_l": 1, "0%": 1, `C:\temp`: 1, `p\x`: 1,
		"100_": 0, "1%0": 0, "budget%left": 0, `temp\\x`: 0, "absent": 0,
	} {
		r, err := st.Search(ctx, store.SearchQuery{Query: term})
		if err != nil {
			t.Fatalf("%q: %v", term, err)
		}
		if len(r.Hits) != want {
			t.Errorf("%q: %d hits, want %d", term, len(r.Hits), want)
		}
	}
	// Where case folding is the database's, the hits are the texts that
	// hold the term by strpos(lower(...)), whichever the index.
	for _, term := range []string{"σοφος", "ΣΟΦΟΣ", "istanbul", "İST", "ﬁle", "FILE"} {
		var want int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS x(t) WHERE strpos(lower(x.t), lower($2)) > 0`,
			texts, term).Scan(&want); err != nil {
			t.Fatal(err)
		}
		r, err := st.Search(ctx, store.SearchQuery{Query: term})
		if err != nil {
			t.Fatalf("%q: %v", term, err)
		}
		if len(r.Hits) != want {
			t.Errorf("%q: %d hits, want %d (strpos of lower)", term, len(r.Hits), want)
		}
	}
}

// Stores whose first migrations run at once, each in a schema of its own
// in a database without pg_trgm, race to create the extension: the
// losers' CREATE EXTENSION fails, and migration 42 looks the extension up
// again and finds the winner's. Every schema ends with pg_trgm's index.
func TestSearchIndexExtensionRace(t *testing.T) {
	ctx := context.Background()
	admin := adminPool(t)
	var b [6]byte
	rand.Read(b[:])
	db := "trgm_race_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", db, err)
		}
	})
	base := asRoleOn(t, db, admin.Config().ConnConfig.User)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const n = 6
	locs := make([]string, n)
	for i := range locs {
		schema := fmt.Sprintf("race_%d", i)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		if locs[i], err = withParam(base, "search_path", schema); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, n)
	for _, loc := range locs {
		go func() {
			st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
			if err == nil {
				err = st.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		var trgm, function bool
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT to_regclass('race_%d.search_docs_trgm') IS NOT NULL,
			to_regclass('race_%d.search_docs_trigrams') IS NOT NULL`, i, i)).Scan(&trgm, &function); err != nil {
			t.Fatal(err)
		}
		if !trgm || function {
			t.Errorf("schema race_%d: pg_trgm index %v, function index %v; want pg_trgm's alone", i, trgm, function)
		}
	}
}
