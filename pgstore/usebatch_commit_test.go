package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// TestUseBatchCommitPipelineFailures: a batch sends its COMMIT in a
// pipeline with statements before it (usebatch_tx.go): with the writes of
// the rows of its sessions with several calls (commitWrites), or, in a
// batch without such sessions, with all its statements (decideBatch). A
// fault injected by a trigger on the first write of session g's row,
// once, in each kind of batch, shows that nothing is acknowledged unless
// the COMMIT succeeded, and nothing is counted twice:
//   - the server refuses the write, or its session ends at the write, or
//     it refuses the COMMIT: nothing committed (the server skips the
//     COMMIT after a refused write), so every call of the batch is
//     decided again on its own, each counted once;
//   - the server's session ends at the COMMIT: the outcome is unknown
//     (a COMMIT may have committed before such an end), so every call
//     of the batch gets an error and is not decided again; here nothing
//     had committed, and nothing is counted.
func TestUseBatchCommitPipelineFailures(t *testing.T) {
	loc := newSchema(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"g", "o"} {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: id, AgentID: "A", AuthorizedTools: []string{"read_file"}, CallBudget: 100, TimeLimit: time.Hour,
		}); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE SEQUENCE fault_once`)
	exec(`CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.id = 'g' THEN
			IF nextval('fault_once') = 1 THEN
				IF TG_ARGV[0] = 'end' THEN
					PERFORM pg_terminate_backend(pg_backend_pid());
					PERFORM pg_sleep(10);
				END IF;
				RAISE EXCEPTION 'injected fault';
			END IF;
		END IF;
		RETURN NEW;
	END $$`)
	use := func(id string) store.UseRequest { return store.UseRequest{SessionID: id, Tools: []string{"read_file"}} }
	calls := map[string]int64{"g": 0, "o": 0}
	for _, batch := range [][]store.UseRequest{
		{use("g"), use("o"), use("g"), use("g")}, // g's row read, then written with the COMMIT
		{use("g"), use("o")},                     // one UPDATE for both, then the COMMIT
	} {
		for _, c := range []struct {
			name    string
			trigger string
			unknown bool // every call gets an error, nothing is decided again
		}{
			{"write refused", `CREATE TRIGGER fault BEFORE UPDATE ON governed_sessions
			FOR EACH ROW EXECUTE FUNCTION fault('raise')`, false},
			{"session ended at the write", `CREATE TRIGGER fault BEFORE UPDATE ON governed_sessions
			FOR EACH ROW EXECUTE FUNCTION fault('end')`, false},
			{"commit refused", `CREATE CONSTRAINT TRIGGER fault AFTER UPDATE ON governed_sessions
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault('raise')`, false},
			{"session ended at the commit", `CREATE CONSTRAINT TRIGGER fault AFTER UPDATE ON governed_sessions
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault('end')`, true},
		} {
			exec(`DROP TRIGGER IF EXISTS fault ON governed_sessions`)
			exec(`ALTER SEQUENCE fault_once RESTART`)
			exec(c.trigger)
			committed, _ := st.UseBatchStats()
			_, errs := st.DecideUseBatch(ctx, batch)
			var fired bool
			if err := admin.QueryRow(ctx, `SELECT is_called FROM fault_once`).Scan(&fired); err != nil {
				t.Fatal(err)
			}
			if !fired {
				t.Fatalf("%s: the fault did not fire", c.name)
			}
			if n, _ := st.UseBatchStats(); n != committed {
				t.Errorf("%s: the batch committed", c.name)
			}
			for i, err := range errs {
				switch {
				case c.unknown && err == nil:
					t.Errorf("%s: call %d acknowledged; want an error", c.name, i)
				case c.unknown && store.AuditOutcome(err) != "":
					t.Errorf("%s: call %d refused (%v); want an error", c.name, i, err)
				case !c.unknown && err != nil:
					t.Errorf("%s: call %d: %v", c.name, i, err)
				case !c.unknown:
					calls[batch[i].SessionID]++
				}
			}
			wantCalls(t, st, calls)
		}
	}
	exec(`DROP TRIGGER fault ON governed_sessions`)
	// The store goes on: a batch after the faults commits, in one round
	// trip, and the call its UPDATE refuses (a tool not allowed) is
	// decided after it, refused and audited once.
	_, errs := st.DecideUseBatch(ctx, []store.UseRequest{use("g"), {SessionID: "o", Tools: []string{"delete_file"}}})
	if errs[0] != nil || !errors.Is(errs[1], store.ErrToolNotAuthorized) {
		t.Fatalf("after the faults: %v", errs)
	}
	calls["g"]++
	wantCalls(t, st, calls)
	events := useEvents(t, st)
	for id, n := range calls {
		if got := int64(events[id][store.OutcomeAllowed]); got != n {
			t.Errorf("%s: %d allowed use events; want %d", id, got, n)
		}
	}
	if n := events["o"][store.OutcomeToolDenied]; n != 1 {
		t.Errorf("o: %d tool_not_authorized events; want 1", n)
	}
	if rep, err := st.Audit().Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("audit verify: %+v, %v", rep, err)
	}
}
