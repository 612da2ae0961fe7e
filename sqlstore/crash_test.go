package sqlstore_test

// Crash trials: a helper process (this test binary, started again) makes
// governed Use calls and creates sessions in a loop and prints an
// acknowledgement after each call returned success; the parent kills it
// with SIGKILL at a random moment — while it starts, creates the file,
// migrates, or writes — reopens the database and checks that every
// acknowledged change is there, that the budget counter equals the
// acknowledged calls plus at most the calls in flight, that the counter
// and the per-request records agree exactly, and that PRAGMA
// integrity_check is ok.
//
// 50 trials run by default; for more:
//
//	SQLSTORE_CRASH_TRIALS=1000 go test ./sqlstore -run TestCrashTrials -v
//	go test ./sqlstore -run TestCrashTrials -v -args -crash.trials=1000
//
// SQLSTORE_CRASH_SEED reproduces a run (the seed is logged).

import (
	"context"
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
// makes sure session "s" exists, prints "ready", then each worker loops:
// Use of "s" with a unique request id, acknowledged as "use <id>"; worker
// 0 also creates a session every 8th turn, acknowledged as "create <id>".
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
			}
		})
	}
	wg.Wait() // only on error: the parent kills the process
	return <-errc
}

// crashTotals is what the trials did, for the closing report.
var crashTotals struct {
	sync.Mutex
	trials, kills, early, acked, inFlight int
}

func TestCrashTrials(t *testing.T) {
	trials := *crashTrialsFlag
	if trials == 0 {
		trials = envInt("SQLSTORE_CRASH_TRIALS", 50)
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SQLSTORE_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("%d crash trials, seed %d (SQLSTORE_CRASH_SEED)", trials, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	var path string
	var calls int64 // the counter of "s" after the last trial
	for trial := range trials {
		// Every tenth trial starts on a fresh file, so that kills also
		// land in file creation and migration.
		if trial%10 == 0 {
			path = filepath.Join(dir, fmt.Sprintf("crash-%d.db", trial))
			calls = 0
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
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "use "):
				uses = append(uses, l[4:])
			case strings.HasPrefix(l, "create "):
				creates = append(creates, l[7:])
			}
		}
		calls = verifyCrash(t, trial, path, uses, creates, calls, workers)
		crashTotals.Lock()
		crashTotals.trials++
		crashTotals.kills++
		if early {
			crashTotals.early++
		}
		crashTotals.acked += len(uses) + len(creates)
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
// acknowledged writes. prev is the counter before the trial; it returns
// the counter now.
func verifyCrash(t *testing.T, trial int, path string, uses, creates []string, prev int64, workers int) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if len(uses)+len(creates) > 0 {
			t.Fatalf("trial %d: %d acknowledged writes, but the database file does not exist", trial, len(uses)+len(creates))
		}
		return prev
	}
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatalf("trial %d: reopen after the kill: %v", trial, err)
	}
	gov := st.Governance()
	s, err := gov.Get(ctx, "s")
	if errors.Is(err, store.ErrNotFound) && len(uses)+len(creates) == 0 {
		st.Close()
		return prev
	}
	if err != nil {
		t.Fatalf("trial %d: session s: %v", trial, err)
	}
	for _, id := range creates {
		if _, err := gov.Get(ctx, id); err != nil {
			t.Fatalf("trial %d: acknowledged session %s: %v", trial, id, err)
		}
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
	delta := s.CallsMade - prev
	acked := int64(len(uses))
	if delta < acked || delta > acked+int64(workers) {
		t.Fatalf("trial %d: counter moved by %d, acknowledged %d, at most %d in flight", trial, delta, acked, workers)
	}
	crashTotals.Lock()
	crashTotals.inFlight += int(delta - acked)
	crashTotals.Unlock()
	integrityCheck(t, path)
	return s.CallsMade
}
