package demo_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func openStore(t *testing.T, path string) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSeed: each step writes what the demo shows, and reads it back from
// the store: the budget spent with its two refusals, the conversation,
// the cancelled turn's cause taken once, the cost limit stopping the
// agent after three calls, the forks, the search hit and the policies.
func TestSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	defer st.Close()
	r, err := demo.Seed(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	g := r.Governed
	var refusals []error
	for _, u := range g.Uses {
		refusals = append(refusals, u.Refused)
	}
	if len(g.Uses) != 5 || !errors.Is(refusals[2], store.ErrToolNotAuthorized) || !errors.Is(refusals[4], store.ErrBudgetExceeded) ||
		refusals[0] != nil || refusals[1] != nil || refusals[3] != nil || g.Uses[3].Session.CallsMade != 3 {
		t.Errorf("uses: %+v", g.Uses)
	}
	if got, err := st.Governance().Get(ctx, g.Session.ID); err != nil || got.CallsMade != 3 || g.Final.CallsMade != 3 {
		t.Errorf("governed session stored: %+v, %v; read back %+v", got, err, g.Final)
	}
	if c := r.Conversation; c.Appended.MessageCount != 4 || len(c.Last) != 2 || c.Last[1].Seq != 3 || c.Info.TotalUsage.TotalTokens != 1285 {
		t.Errorf("conversation: %+v", c)
	}
	if rt := r.Runtime; rt.ContextCause != store.CauseClientRequest || rt.Cause != store.CauseClientRequest || !rt.Taken || rt.TakenAgain ||
		rt.Final.Turn.Running || rt.Upload.SizeBytes == 0 {
		t.Errorf("runtime: %+v", rt)
	}
	s := r.Spend
	if s.Settled != 3 || s.Limit == nil || !errors.Is(s.Refusal, store.ErrSpendLimitExceeded) || s.Limit.Spent != 39_000 {
		t.Errorf("spend: settled %d, refusal %v, limit %+v", s.Settled, s.Refusal, s.Limit)
	}
	if s.Status.Limits[0].Spent != 39_000 || !s.Audit.OK() || s.AuditEvents == 0 {
		t.Errorf("spend status %+v, audit %+v (%d events)", s.Status.Limits[0], s.Audit, s.AuditEvents)
	}
	// The settled calls' usage went to the conversation.
	if want := int64(1285 + 3*3520); s.Conversation.TotalUsage.TotalTokens != want {
		t.Errorf("conversation after spend: %d tokens, want %d", s.Conversation.TotalUsage.TotalTokens, want)
	}
	if f := r.ConversationFork; f.ID != g.Session.ID+demo.ForkSuffix || len(f.History) != 2 || len(f.Tail.Messages) != 1 {
		t.Errorf("conversation fork: %+v", f)
	}
	a := r.AgentSession
	var forkIDs []string
	for _, ev := range a.ForkEvents {
		forkIDs = append(forkIDs, ev.ID)
	}
	if len(a.History) != 2 || !slices.Equal(forkIDs, []string{"turn-1", "turn-2", "turn-3", "turn-4", "turn-5", "retry-6"}) ||
		string(a.ForkState.State.Session["step"]) != "5" {
		t.Errorf("agent session: fork events %v, state %s, history %d nodes", forkIDs, a.ForkState.State.Session["step"], len(a.History))
	}
	if len(r.SearchHits) != 1 || r.SearchHits[0].SessionID != g.Session.ID || r.SearchHits[0].Seq != 3 {
		t.Errorf("search: %+v", r.SearchHits)
	}
	stored, err := st.Retention().Policies(ctx)
	if err != nil || len(stored) != len(demo.Policies()) || !reflect.DeepEqual(r.Policies, demo.Policies()) {
		t.Errorf("policies stored: %+v, %v", stored, err)
	}
	// A second run adds its own sessions beside the first's.
	r2, err := demo.Seed(ctx, st)
	if err != nil || r2.Governed.Session.ID == g.Session.ID {
		t.Fatalf("second seed: %v, id %q", err, r2.Governed.Session.ID)
	}
}

// TestSeedStopsAtFailure: a failing step stops the seed with its error,
// and the result holds the steps before it.
func TestSeedStopsAtFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	st.Close()
	r, err := demo.Seed(ctx, st)
	if err == nil || r.Governed != nil {
		t.Fatalf("seed on a closed store: %+v, %v", r, err)
	}
}

// TestRemove: a store written by demos only is removed; one holding other
// data only with force, and Foreign says what that data is.
func TestRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openStore(t, path)
	if _, err := demo.Seed(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if other, err := demo.Foreign(ctx, path); err != nil || len(other) != 0 {
		t.Fatalf("a store of demos only: %q, %v", other, err)
	}
	st = openStore(t, path)
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "mine", AgentID: "me", CallBudget: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	err := demo.Remove(ctx, path, false)
	var foreign *demo.ForeignDataError
	if !errors.As(err, &foreign) || !slices.Equal(foreign.Found, []string{"1 governed sessions of other agents"}) {
		t.Fatalf("remove without force: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("refused, yet: %v", err)
	}
	if err := demo.Remove(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("removed with force, yet: %v", err)
	}
}

// TestRemoveNotStore: a file that is not a session store is never
// removed, whatever force says.
func TestRemoveNotStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	content := []byte("my notes, not a database\n")
	if err := os.WriteFile(notes, content, 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", "file:"+other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, path := range []string{notes, other} {
		before, _ := os.ReadFile(path)
		err := demo.Remove(ctx, path, true)
		var ns *demo.NotStoreError
		if !errors.As(err, &ns) || ns.Path != path || (path == other) != (ns.Err == nil) {
			t.Errorf("%s: %v", path, err)
		}
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
			t.Errorf("%s changed or went: %v", path, err)
		}
	}
}
