package pgstore_test

// Check (sessionctl doctor's PostgreSQL checks as library code) and
// CheckIntact: a sound store passes; an empty schema, a damaged document,
// an orphan row and a read-only session fail the right check; nothing is
// changed.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

func pgCheck(t *testing.T, url string, opts check.Options) (check.Report, map[string]check.Result, []string) {
	t.Helper()
	rep, err := pgstore.Check(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	byName := map[string]check.Result{}
	var names []string
	for _, r := range rep.Results {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	return rep, byName, names
}

// soundStore creates a store in a new schema with a governed session and
// a conversation, and returns its URL.
func soundStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "g1", AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c1", store.UserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestCheckSoundStore(t *testing.T) {
	loc := soundStore(t)
	rep, _, names := pgCheck(t, loc, check.Options{})
	want := []string{"server", "encoding", "connections", "schema", "tables", "documents", "write", "indexes", "constraints", "foreign_keys", "store", "audit", "search_index"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks %v, want %v", names, want)
	}
	for _, r := range rep.Results {
		if r.Status == check.Fail {
			t.Errorf("%s: %s %s", r.Name, r.Status, r.Detail)
		}
	}
	_, byName, _ := pgCheck(t, loc, check.Options{Quick: true})
	if d := byName["foreign_keys"].Detail; d != "orphan-row scan skipped (--quick)" {
		t.Errorf("quick foreign_keys: %q", d)
	}
	if err := pgstore.CheckIntact(context.Background(), loc); err != nil {
		t.Errorf("CheckIntact on a sound store: %v", err)
	}
}

func TestCheckEmptySchema(t *testing.T) {
	loc := newSchema(t)
	rep, byName, _ := pgCheck(t, loc, check.Options{})
	if !rep.Failed() || byName["schema"].Status != check.Fail || !strings.HasPrefix(byName["schema"].Detail, "not a session store: no goose_db_version table") {
		t.Fatalf("an empty schema: %+v", rep.Results)
	}
	// Nothing was created.
	var n int
	if err := adminPool(t).QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schemaOf(t, loc)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the check created %d tables (%v)", n, err)
	}
}

func TestCheckDamage(t *testing.T) {
	ctx := context.Background()
	loc := soundStore(t)
	exec := func(q string) {
		t.Helper()
		conn, err := pgstore.Connect(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`UPDATE conversations SET queue_config = '{' WHERE id = 'c1'`)
	rep, byName, _ := pgCheck(t, loc, check.Options{})
	if d := byName["documents"]; !rep.Failed() || d.Status != check.Fail || !strings.Contains(d.Detail, "conversations c1 (queue config)") {
		t.Fatalf("a damaged document: %+v", rep.Results)
	}
	if _, ok := byName["store"]; ok {
		t.Errorf("the store was opened: %+v", byName["store"])
	}
	var dmg *check.DamagedError
	if err := pgstore.CheckIntact(ctx, loc); !errors.As(err, &dmg) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("CheckIntact: %v", err)
	}
	exec(`UPDATE conversations SET queue_config = NULL WHERE id = 'c1'`)

	// An orphan row: the parent removed past the foreign keys' triggers.
	exec(`SET session_replication_role = replica; DELETE FROM conversations WHERE id = 'c1'`)
	rep, byName, _ = pgCheck(t, loc, check.Options{})
	if fk := byName["foreign_keys"]; !rep.Failed() || fk.Status != check.Fail ||
		!strings.Contains(fk.Detail, "a row of conversation_messages refers to a missing row of conversations") {
		t.Errorf("an orphan row: %+v", rep.Results)
	}
	if _, byName, _ = pgCheck(t, loc, check.Options{Quick: true}); byName["foreign_keys"].Status != check.OK {
		t.Errorf("quick: %+v", byName["foreign_keys"])
	}
}

func TestCheckReadOnlySession(t *testing.T) {
	loc := soundStore(t)
	rep, byName, _ := pgCheck(t, loc+"&default_transaction_read_only=on", check.Options{})
	if w := byName["write"]; !rep.Failed() || w.Status != check.Fail || !strings.Contains(w.Detail, "default_transaction_read_only is on") {
		t.Fatalf("a read-only session: %+v", rep.Results)
	}
}

func TestCheckUnreachable(t *testing.T) {
	rep, err := pgstore.Check(context.Background(), "postgres://u:secret@127.0.0.1:1/none?connect_timeout=2", check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Name != "server" || rep.Results[0].Status != check.Fail {
		t.Fatalf("an unreachable server: %+v", rep.Results)
	}
	if d := rep.Results[0].Detail; strings.Contains(d, "secret") || !strings.Contains(d, "xxxxx") {
		t.Errorf("the detail does not redact the password: %q", d)
	}
}
