package demo_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.DropTemplate()
	os.Exit(code)
}

// TestSeedPostgres: the demo writes the same records on PostgreSQL.
func TestSeedPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.NewStore(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := demo.Seed(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Governed; g.Final.CallsMade != 3 || !errors.Is(g.Uses[2].Refused, store.ErrToolNotAuthorized) || !errors.Is(g.Uses[4].Refused, store.ErrBudgetExceeded) {
		t.Errorf("governed: %+v", g)
	}
	if s := r.Spend; s.Settled != 3 || s.Status.Limits[0].Spent != 39_000 || !s.Audit.OK() {
		t.Errorf("spend: settled %d, status %+v, audit %+v", s.Settled, s.Status, s.Audit)
	}
	if len(r.ConversationFork.History) != 2 || len(r.AgentSession.History) != 2 || len(r.Policies) != len(demo.Policies()) {
		t.Errorf("forks %d and %d nodes, %d policies", len(r.ConversationFork.History), len(r.AgentSession.History), len(r.Policies))
	}
}
