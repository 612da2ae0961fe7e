package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// The search index's merge settings (migration 35): FTS5 keeps them in
// search_fts_config, so they are read back from there, on a fresh
// database, on one migrated from the schema before them, after the
// rebuild a reindex runs, and after a step down. crisismerge keeps FTS5's
// default (no row).
const (
	wantAutomerge   = 8
	wantCrisismerge = 0
)

// ftsSettings reads FTS5's automerge and crisismerge from the index's
// configuration table (0 where it holds none: FTS5's defaults apply).
func ftsSettings(t *testing.T, db *sql.DB) (automerge, crisismerge int) {
	t.Helper()
	for k, dst := range map[string]*int{"automerge": &automerge, "crisismerge": &crisismerge} {
		err := db.QueryRow(`SELECT v FROM search_fts_config WHERE k = ?`, k).Scan(dst)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
	}
	return automerge, crisismerge
}

func TestSearchIndexMergeSettings(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, path, when string) {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if am, cm := ftsSettings(t, db); am != wantAutomerge || cm != wantCrisismerge {
			t.Fatalf("%s: automerge %d, crisismerge %d; want %d and %d", when, am, cm, wantAutomerge, wantCrisismerge)
		}
	}
	// searchable appends n events holding "merge-probe" and checks that a
	// search finds every one.
	searchable := func(t *testing.T, st *sqlstore.Store, session string, n int) {
		t.Helper()
		key := store.SessionKey{App: "a", User: "u", Session: session}
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			data := fmt.Sprintf(`{"content":{"parts":[{"text":"merge-probe number %d"}],"role":"model"},"author":"m"}`, i)
			if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
				Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: []byte(data)}}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := st.Search(ctx, store.SearchQuery{Query: "merge-probe", Session: session, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != n {
			t.Fatalf("search found %d of %d events", len(res.Hits), n)
		}
	}

	t.Run("fresh", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fresh.db") // created by Open, not copied
		st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
		if err != nil {
			t.Fatal(err)
		}
		searchable(t, st, "s", 40)
		// A rebuild (what Reindex runs on a damaged index) keeps them.
		if _, err := st.Reindex(ctx, store.ReindexRequest{}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, path, "fresh")
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Exec(`INSERT INTO search_fts (search_fts) VALUES ('rebuild')`); err != nil {
			t.Fatal(err)
		}
		check(t, path, "after a rebuild")
	})

	t.Run("migrated", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "migrated.db")
		p, mdb, err := sqlstore.NewMigrationProvider(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, 34); err != nil {
			t.Fatal(err)
		}
		if am, cm := ftsSettings(t, mdb); am != 0 || cm != 0 {
			t.Fatalf("before migration 35: automerge %d, crisismerge %d; want FTS5's defaults (no rows)", am, cm)
		}
		mdb.Close()
		st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
		if err != nil {
			t.Fatal(err)
		}
		searchable(t, st, "m", 40)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, path, "migrated")

		// One step down leaves FTS5's defaults, as before.
		p, mdb, err = sqlstore.NewMigrationProvider(path)
		if err != nil {
			t.Fatal(err)
		}
		defer mdb.Close()
		if _, err := p.DownTo(ctx, 34); err != nil {
			t.Fatal(err)
		}
		if am, cm := ftsSettings(t, mdb); am != 0 || cm != 0 {
			t.Fatalf("after the step down: automerge %d, crisismerge %d; want FTS5's defaults (no rows)", am, cm)
		}
	})
}
