package sqlstore_test

// Crash trials: a helper process (this test binary, started again) makes
// governed Use calls, appends messages to a conversation and creates
// sessions in a loop and prints an acknowledgement after each call
// returned success; the parent kills it
// with SIGKILL at a random moment — while it starts, creates the file,
// migrates, or writes — reopens the database and checks that every
// acknowledged change is there, that the budget counter equals the
// acknowledged calls plus at most the calls in flight, that the counter
// and the per-request records agree exactly, that the message history is
// gapless and holds every acknowledged message at its acknowledged
// position, and that PRAGMA integrity_check is ok.
//
// 50 trials run by default (10 under the race detector); for more:
//
//	SQLSTORE_CRASH_TRIALS=1000 go test ./sqlstore -run TestCrashTrials -v
//	go test ./sqlstore -run TestCrashTrials -v -args -crash.trials=1000
//
// SQLSTORE_CRASH_SEED reproduces a run (the seed is logged).

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var crashTrialsFlag = flag.Int("crash.trials", 0, "number of crash trials (default 50, or $SQLSTORE_CRASH_TRIALS)")

var _ = registerRelRole("crash-writer", crashWriterRole)

// crashWriterRole: args are path, workers, synchronous level, and the
// prefix of its request ids. It opens (creating if needed) the store,
// makes sure session "s" and conversation "c" exist, prints "ready", then
// each worker loops: Use of "s" with a unique request id, acknowledged as
// "use <id>", and an append of one message to "c", acknowledged as
// "msg <seq> <text>"; worker 0 also creates a session every 8th turn,
// acknowledged as "create <id>". Each worker also reserves against the cost
// limit of session "sp" ("reserve <id>") and settles ("settle <id>") or
// releases ("release <id>") every reservation in turn.
func crashWriterRole(ctx context.Context, args []string, out *lineWriter) error {
	path, prefix := args[0], args[3]
	workers, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithSynchronous(sqlstore.Synchronous(args[2])))
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	gov := st.Governance()
	if _, err := gov.Create(ctx, longSession("s", 1<<40)); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("create s: %w", err)
	}
	spendReq := longSession("sp", 1)
	spendReq.SpendLimits = []store.SpendLimit{{Metric: store.MetricCost, Limit: 1 << 50, Currency: "USD"}}
	if _, err := gov.Create(ctx, spendReq); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("create sp: %w", err)
	}
	conv := st.Conversations()
	if ok, err := conv.Exists(ctx, "c"); err != nil {
		return err
	} else if !ok {
		if _, err := conv.Save(ctx, store.NewConversation("c")); err != nil {
			return fmt.Errorf("save c: %w", err)
		}
	}
	if err := out.Line("ready"); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				if w == 0 && i%8 == 7 {
					id := fmt.Sprintf("%s-c%d", prefix, i)
					if _, err := gov.Create(ctx, longSession(id, 1)); err != nil {
						errc <- fmt.Errorf("create %s: %w", id, err)
						return
					}
					if err := out.Line("create %s", id); err != nil {
						errc <- err
						return
					}
				}
				id := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				if _, err := gov.Use(ctx, store.UseRequest{SessionID: "s", Tools: []string{"t"}, RequestID: id}); err != nil {
					errc <- fmt.Errorf("use %s: %w", id, err)
					return
				}
				if err := out.Line("use %s", id); err != nil {
					errc <- err
					return
				}
				res, err := conv.AppendMessages(ctx, "c", store.UserMessage(id))
				if err != nil {
					errc <- fmt.Errorf("append %s: %w", id, err)
					return
				}
				if err := out.Line("msg %d %s", res.FirstSeq, id); err != nil {
					errc <- err
					return
				}
				if err := crashSpend(ctx, st.Spend(), id+"-r", i%2 == 0, out); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait() // only on error: the parent kills the process
	return <-errc
}

// crashSpend reserves 10 micro-units on "sp" as id, then settles 7 of
// them or releases the reservation, acknowledging each step.
func crashSpend(ctx context.Context, sp store.Spend, id string, settle bool, out *lineWriter) error {
	if _, err := sp.Reserve(ctx, store.ReserveRequest{SessionID: "sp", RequestID: id,
		Amount: store.SpendAmount{CostMicros: 10}, Currency: "USD", TTL: time.Hour}); err != nil {
		return fmt.Errorf("reserve %s: %w", id, err)
	}
	if err := out.Line("reserve %s", id); err != nil {
		return err
	}
	if settle {
		if _, err := sp.Settle(ctx, store.SettleRequest{SessionID: "sp", RequestID: id, Actual: store.SpendAmount{CostMicros: 7}}); err != nil {
			return fmt.Errorf("settle %s: %w", id, err)
		}
		return out.Line("settle %s", id)
	}
	if _, err := sp.Release(ctx, store.ReleaseRequest{SessionID: "sp", RequestID: id}); err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	return out.Line("release %s", id)
}

// crashTotals is what the trials did, for the closing report.
var crashTotals struct {
	sync.Mutex
	trials, kills, early, acked, inFlight int
}

func TestCrashTrials(t *testing.T) {
	skipShort(t)
	trials := *crashTrialsFlag
	if trials == 0 {
		// In the sampled configuration (the race run, a plain go test) 10
		// trials run; ./test.sh runs the 50 of CI without the detector.
		trials = envInt("SQLSTORE_CRASH_TRIALS", map[bool]int{false: 50, true: 10}[sampleReliability])
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SQLSTORE_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("%d crash trials, seed %d (SQLSTORE_CRASH_SEED)", trials, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	var path string
	var calls int64    // the counter of "s" after the last trial
	var messages int64 // the messages of "c" after the last trial
	for trial := range trials {
		// Every tenth trial starts on a fresh file, so that kills also
		// land in file creation and migration.
		if trial%10 == 0 {
			path = filepath.Join(dir, fmt.Sprintf("crash-%d.db", trial))
			calls, messages = 0, 0
		}
		workers := []int{1, 4}[trial%2]
		sync := []string{"FULL", "NORMAL"}[trial/2%2]
		prefix := fmt.Sprintf("t%d", trial)
		early := trial%10 == 0 || rng.IntN(5) == 0
		h := startHelper(t, "crash-writer", path, strconv.Itoa(workers), sync, prefix)
		var pre []string
		if early {
			time.Sleep(time.Duration(rng.IntN(60_000)) * time.Microsecond)
		} else {
			pre = h.expectLine(t, "ready", 60*time.Second)
			time.Sleep(time.Duration(rng.IntN(150_000)) * time.Microsecond)
		}
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("trial %d: kill: %v", trial, err)
		}
		lines, err := h.wait()
		lines = append(pre, lines...)
		if err == nil || !strings.Contains(err.Error(), "signal: killed") {
			t.Fatalf("trial %d: the helper was not killed but ended: %v", trial, err)
		}
		var uses, creates []string
		spend := map[string]string{} // reservation id -> last acknowledged step
		msgs := map[int64]string{}
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "msg "):
				var seq int64
				var text string
				if _, err := fmt.Sscanf(l, "msg %d %s", &seq, &text); err != nil {
					t.Fatalf("trial %d: bad line %q", trial, l)
				}
				msgs[seq] = text
			case strings.HasPrefix(l, "use "):
				uses = append(uses, l[4:])
			case strings.HasPrefix(l, "create "):
				creates = append(creates, l[7:])
			case strings.HasPrefix(l, "reserve "), strings.HasPrefix(l, "settle "), strings.HasPrefix(l, "release "):
				step, id, _ := strings.Cut(l, " ")
				spend[id] = step
			}
		}
		calls, messages = verifyCrash(t, trial, path, uses, creates, msgs, calls, messages, workers)
		verifyCrashSpend(t, trial, path, spend)
		crashTotals.Lock()
		crashTotals.trials++
		crashTotals.kills++
		if early {
			crashTotals.early++
		}
		crashTotals.acked += len(uses) + len(creates) + len(msgs) + len(spend)
		crashTotals.Unlock()
	}
	crashTotals.Lock()
	t.Logf("%d trials (%d killed early, during start/open), %d acknowledged writes, %d unacknowledged calls found committed (in flight at the kill)",
		crashTotals.trials, crashTotals.early, crashTotals.acked, crashTotals.inFlight)
	crashTotals.Unlock()
	// Each reopen removed the temporary files of a creator that was killed.
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.creating-*")); len(leftovers) > 0 {
		t.Fatalf("temporary files left by kills during creation: %q", leftovers)
	}
}

// verifyCrash reopens the database after a kill and checks the trial's
// acknowledged writes. prevCalls and prevMsgs are the counter and the
// message count before the trial; it returns them now.
func verifyCrash(t *testing.T, trial int, path string, uses, creates []string, msgs map[int64]string,
	prevCalls, prevMsgs int64, workers int) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	acked := len(uses) + len(creates) + len(msgs)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if acked > 0 {
			t.Fatalf("trial %d: %d acknowledged writes, but the database file does not exist", trial, acked)
		}
		return prevCalls, prevMsgs
	}
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatalf("trial %d: reopen after the kill: %v", trial, err)
	}
	defer st.Close()
	gov, conv := st.Governance(), st.Conversations()
	s, err := gov.Get(ctx, "s")
	if errors.Is(err, store.ErrNotFound) && acked == 0 {
		return prevCalls, prevMsgs
	}
	if err != nil {
		t.Fatalf("trial %d: session s: %v", trial, err)
	}
	for _, id := range creates {
		if _, err := gov.Get(ctx, id); err != nil {
			t.Fatalf("trial %d: acknowledged session %s: %v", trial, id, err)
		}
	}
	// The history: gapless from 0, the count agrees, every acknowledged
	// message at its position.
	var history []store.Message
	for {
		page, err := conv.Messages(ctx, "c", int64(len(history)), store.MaxMessagePage)
		if errors.Is(err, store.ErrNotFound) && acked == 0 {
			break
		}
		if err != nil {
			t.Fatalf("trial %d: messages: %v", trial, err)
		}
		history = append(history, page...)
		if len(page) < store.MaxMessagePage {
			break
		}
	}
	for i, m := range history {
		if m.Seq != int64(i) {
			t.Fatalf("trial %d: message %d has seq %d: the history has a gap", trial, i, m.Seq)
		}
	}
	if len(history) > 0 || len(msgs) > 0 {
		n, err := conv.MessageCount(ctx, "c")
		if err != nil || n != int64(len(history)) {
			t.Fatalf("trial %d: message count %d (%v), history holds %d", trial, n, err, len(history))
		}
	}
	for seq, text := range msgs {
		if seq >= int64(len(history)) || history[seq].Text() != text {
			t.Fatalf("trial %d: acknowledged message %d %q is lost", trial, seq, text)
		}
	}
	msgDelta := int64(len(history)) - prevMsgs
	if msgDelta < int64(len(msgs)) || msgDelta > int64(len(msgs)+workers) {
		t.Fatalf("trial %d: history grew by %d, acknowledged %d, at most %d in flight", trial, msgDelta, len(msgs), workers)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db := openSQL(t, path, true)
	recorded := map[string]bool{}
	rows, err := db.Query("SELECT request_id FROM governed_use_requests WHERE session_id = 's' AND outcome = 'ok'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		recorded[id] = true
	}
	rows.Close()
	db.Close()
	for _, id := range uses {
		if !recorded[id] {
			t.Fatalf("trial %d: acknowledged use %s is lost", trial, id)
		}
	}
	if int64(len(recorded)) != s.CallsMade {
		t.Fatalf("trial %d: counter %d but %d recorded calls: the two did not commit together", trial, s.CallsMade, len(recorded))
	}
	delta := s.CallsMade - prevCalls
	if delta < int64(len(uses)) || delta > int64(len(uses)+workers) {
		t.Fatalf("trial %d: counter moved by %d, acknowledged %d, at most %d in flight", trial, delta, len(uses), workers)
	}
	crashTotals.Lock()
	crashTotals.inFlight += int(delta-int64(len(uses))) + int(msgDelta-int64(len(msgs)))
	crashTotals.Unlock()
	integrityCheck(t, path)
	return s.CallsMade, int64(len(history))
}

// verifyCrashSpend checks the reservations of a trial after the kill:
// every acknowledged step is there (a reservation at least reserved, a
// settle settled with its usage, a release released), the limit's
// counters equal what the reservations say, exactly, and every audit chain
// verifies.
func verifyCrashSpend(t *testing.T, trial int, path string, acked map[string]string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	db := openSQL(t, path, true)
	defer db.Close()
	var tables int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'spend_reservations'").Scan(&tables); err != nil || tables == 0 {
		if len(acked) > 0 {
			t.Fatalf("trial %d: %d acknowledged spend steps, no reservations table (%v)", trial, len(acked), err)
		}
		return
	}
	status := map[string]string{}
	actual := map[string]int64{}
	rows, err := db.Query("SELECT request_id, status, actual_cost FROM spend_reservations WHERE session_id = 'sp'")
	if err != nil {
		t.Fatal(err)
	}
	var settledSum, reservedSum int64
	for rows.Next() {
		var id, st string
		var cost int64
		if err := rows.Scan(&id, &st, &cost); err != nil {
			t.Fatal(err)
		}
		status[id], actual[id] = st, cost
		switch st {
		case "settled":
			settledSum += cost
		case "reserved":
			reservedSum += 10
		}
	}
	rows.Close()
	for id, step := range acked {
		got := status[id]
		switch {
		case step == "reserve" && got == "":
			t.Fatalf("trial %d: acknowledged reservation %s is lost", trial, id)
		case step == "settle" && (got != "settled" || actual[id] != 7):
			t.Fatalf("trial %d: acknowledged settle %s reads %q with %d", trial, id, got, actual[id])
		case step == "release" && got != "released":
			t.Fatalf("trial %d: acknowledged release %s reads %q", trial, id, got)
		}
	}
	var spent, reserved int64
	err = db.QueryRow("SELECT spent, reserved FROM spend_limits WHERE session_id = 'sp'").Scan(&spent, &reserved)
	if errors.Is(err, sql.ErrNoRows) && len(status) == 0 {
		return
	}
	if err != nil {
		t.Fatalf("trial %d: the limit of sp: %v", trial, err)
	}
	if spent != settledSum || reserved != reservedSum {
		t.Fatalf("trial %d: limit counters spent %d reserved %d, the reservations say %d and %d: they did not commit together",
			trial, spent, reserved, settledSum, reservedSum)
	}
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("trial %d: reopen: %v", trial, err)
	}
	defer st.Close()
	rep, err := st.Audit().Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("trial %d: audit after the kill: %+v, %v", trial, rep.Problems, err)
	}
}
