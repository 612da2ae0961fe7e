package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// A search's statements run with plans made for their arguments, never
// with a generic plan: pgx prepares and caches each statement on its
// connection, and after five runs PostgreSQL may switch a prepared
// statement to a generic plan, made without the term's trigrams, the
// filters or the cursor, whose choices TestSearchPlansAfterAnalyze never
// sees (it explains each statement with its arguments). The connection
// here is told to prefer generic plans (plan_cache_mode
// force_generic_plan, as a server's or role's setting could), and every
// search statement on it must still have been planned for its arguments
// (pg_prepared_statements counts both kinds per statement, on the pool's
// one connection).
func TestSearchPlansForTheirArguments(t *testing.T) {
	ctx := context.Background()
	pc, err := pgxpool.ParseConfig(pgtest.NewStore(t))
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 1
	pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := pgstore.OpenPool(ctx, pool, pgstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := storetest.BuildCommonTermCorpus(ctx, st, 200); err != nil {
		t.Fatal(err)
	}
	for _, qc := range []store.SearchQuery{
		{Query: "session"},
		{Query: "xylophone"},
		{Query: "session", Session: "s-07"},
		{Query: "session", Kinds: []store.SearchKind{store.SearchMessage}},
	} {
		for _, o := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
			q := qc
			q.Limit, q.Order = 5, o
			for run := 0; run < 7; run++ { // past the five runs after which a generic plan may be chosen
				if _, err := st.Search(ctx, q); err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
			}
		}
	}
	// The search's own statements: those that read search_docs (the
	// fold's, which write it, run in their own transactions).
	rows, err := pool.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT %FROM search_docs%' AND statement NOT LIKE '%pg_prepared_statements%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var statements int
	for rows.Next() {
		var stmt string
		var generic, custom int64
		if err := rows.Scan(&stmt, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		statements++
		if generic != 0 {
			t.Errorf("a search statement ran %d times with a generic plan (%d with its arguments'):\n%s", generic, custom, stmt)
		}
		if generic+custom == 0 {
			t.Errorf("a search statement was prepared but never ran:\n%s", stmt)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if statements == 0 {
		t.Fatal("no prepared search statement on the connection: the check saw nothing")
	}
}
