package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// The page budget of each write (issue 36, DESIGN "The write path pays
// only for itself"): the pages one operation puts in the write-ahead log,
// and the transactions it commits, counted from the log itself (a figure
// that does not depend on the disk or the machine's load). Each budget is
// the figure measured when it was written (on a store that already holds
// other agents' sessions, so that the rows sit among others) plus less
// than a page of slack for the page splits' rate; a change that writes a
// page more per operation fails here and must raise the budget on purpose,
// in the commit that does. Run them with
//
//	go test ./sqlstore -run PageBudget -v
//
// The ADK adapter's create and append have their own budgets beside
// ADK's own figures (adk/pages_test.go, adk/internal/adkdbbench).

// walSalt reads the salt of the WAL at path (empty when it has no
// header): a checkpoint that restarts the log writes a new one.
func walSalt(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(b) < 32 {
		return ""
	}
	return string(b[16:24])
}

// walPagesPer empties the log of the store's file at path (through raw, a
// connection of its own), runs op n times (i = 0..n-1), and returns the
// pages (WAL frames) and the commits per op. The budget stores run
// without the checkpointer (budgetStore), so nothing restarts the log
// during the count; if something did, the count would be of the last
// operations only, and the test fails rather than report it.
func walPagesPer(t *testing.T, path string, raw *sql.DB, n int, op func(i int) error) (pages, commits float64) {
	t.Helper()
	ctx := context.Background()
	if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if f, _ := walFrames(t, path+"-wal"); f != 0 {
		t.Fatalf("the log holds %d frames after a truncating checkpoint", f)
	}
	var salt string
	for i := range n {
		if err := op(i); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			salt = walSalt(t, path+"-wal")
		}
	}
	if walSalt(t, path+"-wal") != salt {
		t.Fatal("the log restarted during the count")
	}
	frames, commitFrames := walFrames(t, path+"-wal")
	if testing.Verbose() {
		t.Logf("frames of %d operations by object:\n%s", n, walPagesByObject(t, path, raw))
	}
	return float64(frames) / float64(n), float64(commitFrames) / float64(n)
}

// budgetStore opens a store at a fresh path with other agents' governed
// sessions, and a raw connection to its file.
func budgetStore(t *testing.T) (*sqlstore.Store, string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "pages.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithSynchronous(sqlstore.SyncOff), sqlstore.WithBackgroundIndexer(false),
		sqlstore.WithoutCheckpointer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	others := 200
	if raceDetector {
		others = 60
	}
	for i := range others {
		req := longSession(fmt.Sprintf("other-%03d", i), 1_000_000)
		req.AgentID = fmt.Sprintf("agent-%d", i%3)
		if _, err := st.Governance().Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	return st, path, raw
}

// pageBudget is one operation's budget: at most pages per op (a mean, so
// that page splits, which come every so many inserts, are counted at their
// rate) and exactly commits transactions per op.
type pageBudget struct {
	pages   float64
	commits float64
}

func checkBudget(t *testing.T, what string, pages, commits float64, b pageBudget) {
	t.Helper()
	t.Logf("%s: %.2f pages, %.2f commits per operation (budget %.2f pages, %.0f commits)", what, pages, commits, b.pages, b.commits)
	if pages > b.pages {
		t.Errorf("%s writes %.2f pages per operation, budget %.2f: a change added pages (raise the budget on purpose, or take them out)", what, pages, b.pages)
	}
	if commits != b.commits {
		t.Errorf("%s commits %.2f transactions per operation, want %.0f", what, commits, b.commits)
	}
}

// TestPageBudgetGoverned pins the pages of a governed create, Use,
// Reserve and Settle (audited, the default). Measured when written
// (main 919475f): create 11.00 pages (the session's row and its five
// indexes, its audit event and time-index entry, the agent chain's), Use
// 4.28 (the session's row, its audit event and the event's time-index
// entry, with their splits; TestAuditPagesPerUse has the same figure),
// Reserve 9.43, Settle 8.75; one commit each. Raised on purpose for
// create to 12.04 by migration 29: the (tenant, id) index that lets the
// console's governed-sessions page read one page at 100,000 sessions
// (issue 37, item 13) takes a page of its own. Raised on purpose to 13.0
// by migration 33, whose entry in that index carries the status and the
// expiry (12.20 pages on a quiet machine); a run under load measured
// 12.86, when the store's checkpointer restarted the log and the retry
// measured on a larger tree (walPagesPer), and so splits at other points;
// the budget stores now run without the checkpointer, so a measurement
// no longer starts over (nor a Settle's over settled reservations).
func TestPageBudgetGoverned(t *testing.T) {
	ctx := context.Background()
	st, path, raw := budgetStore(t)
	n := 100
	if raceDetector {
		n = 30
	}
	gov := st.Governance()

	pages, commits := walPagesPer(t, path, raw, n, func(i int) error {
		req := longSession(fmt.Sprintf("new-%04d", i), 1_000_000)
		_, err := gov.Create(ctx, req)
		return err
	})
	checkBudget(t, "governed create", pages, commits, pageBudget{pages: 13.0, commits: 1})

	used := fmt.Sprintf("new-%04d", n/2) // one of the sessions just created
	pages, commits = walPagesPer(t, path, raw, n, func(int) error {
		_, err := gov.Use(ctx, store.UseRequest{SessionID: used, Tools: []string{"read_file"}})
		return err
	})
	checkBudget(t, "governed Use", pages, commits, pageBudget{pages: 4.5, commits: 1})

	limited := longSession("limited", 1_000_000)
	limited.SpendLimits = []store.SpendLimit{
		{Metric: store.MetricTotalTokens, Limit: 1 << 40},
		{Metric: store.MetricCost, Limit: 1 << 40, Currency: "USD"},
	}
	if _, err := gov.Create(ctx, limited); err != nil {
		t.Fatal(err)
	}
	amount := store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: 20_000}
	sp := st.Spend()
	pages, commits = walPagesPer(t, path, raw, n, func(i int) error {
		_, err := sp.Reserve(ctx, store.ReserveRequest{SessionID: "limited", RequestID: fmt.Sprintf("r%04d", i), Amount: amount, Currency: "USD"})
		return err
	})
	checkBudget(t, "Reserve", pages, commits, pageBudget{pages: 9.7, commits: 1})

	actual := store.SpendAmount{InputTokens: 900, OutputTokens: 400, CostMicros: 15_000}
	pages, commits = walPagesPer(t, path, raw, n, func(i int) error {
		_, err := sp.Settle(ctx, store.SettleRequest{SessionID: "limited", RequestID: fmt.Sprintf("r%04d", i), Actual: actual})
		return err
	})
	checkBudget(t, "Settle", pages, commits, pageBudget{pages: 9.0, commits: 1})
}

// TestPageBudgetAppends pins the pages of an agent-session event append
// with a one-key state delta (the facet's; the ADK adapter's runner event
// is counted in adk/pages_test.go) and of a conversation's one-message
// append. Measured when written (main 919475f, the search index still
// written by the append's triggers): event append 19.36–19.73 pages,
// message append 14.88–15.15; one commit each. Since the search index left
// the write path (migration 27: the append queues the item's key, the
// indexer folds it in later, and the store here runs none), 8.99 and
// 5.29. Since migration 30 (the idle sweep's index holds the minute of a
// session's last write, so an append within the minute writes no entry
// of it) the event append writes 7.99; since migration 31 (an appended
// event is taken into the search queue by the indexer, from a position
// in the events' rowids, not by a trigger in the append) 6.99. The
// budgets are those figures plus the slack. go test -v lists each budget's pages by table and index.
func TestPageBudgetAppends(t *testing.T) {
	ctx := context.Background()
	st, path, raw := budgetStore(t)
	n := 100
	if raceDetector {
		n = 30
	}
	as := st.AgentSessions()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	res, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	version := res.Version
	data := storetest.BenchEventData()
	for i := range 50 { // a history to append to
		r, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, ExpectedVersion: version,
			Event: store.AgentEvent{ID: fmt.Sprintf("h-%d", i), InvocationID: "inv", Data: data}})
		if err != nil {
			t.Fatal(err)
		}
		version = r.Version
	}
	pages, commits := walPagesPer(t, path, raw, n, func(i int) error {
		r, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, ExpectedVersion: version,
			Event: store.AgentEvent{ID: fmt.Sprintf("ev-%d", i), InvocationID: fmt.Sprintf("inv-%d", i/4), Data: data},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}}})
		if err == nil {
			version = r.Version
		}
		return err
	})
	checkBudget(t, "event append with a state delta", pages, commits, pageBudget{pages: 7.3, commits: 1})

	conv := store.NewConversation("c")
	for i := range 50 {
		conv.Messages = append(conv.Messages, store.UserMessage(fmt.Sprintf("message %d", i)))
	}
	if _, err := st.Conversations().Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	pages, commits = walPagesPer(t, path, raw, n, func(i int) error {
		_, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage(fmt.Sprintf("request %d: %s", i, body)))
		return err
	})
	checkBudget(t, "conversation message append", pages, commits, pageBudget{pages: 5.6, commits: 1})
}
