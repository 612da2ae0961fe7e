package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// The fairness test runs 4 processes × 8 goroutines calling Use on one file
// and checks that the budget counter is exact and that no error (busy or
// other) reaches a caller. It logs the fairness (min/max of per-process
// successful calls) and the worst wait. By default it runs 2 s; set
// SESSIONSTORE_FAIRNESS_SECONDS=20 for the full measurement, which also
// asserts the targets (fairness ≥ 0.25, worst wait ≤ 250 ms):
//
//	SESSIONSTORE_FAIRNESS_SECONDS=20 go test ./sqlstore -run TestMultiProcessFairness -v

const (
	envFairChild = "SQLSTORE_FAIRNESS_CHILD"
	envFairUntil = "SQLSTORE_FAIRNESS_UNTIL"
	envFairStart = "SQLSTORE_FAIRNESS_START"
)

type fairReport struct {
	OK       int64   `json:"ok"`
	Errors   int64   `json:"errors"`
	FirstErr string  `json:"first_err,omitempty"`
	MaxWait  float64 `json:"max_wait_ms"`
	P99      float64 `json:"p99_ms"`
}

// fairnessChild is the body of a helper process (see TestMain).
func fairnessChild() {
	path, id := os.Getenv(envFairChild), os.Args[len(os.Args)-1]
	start, _ := strconv.ParseInt(os.Getenv(envFairStart), 10, 64)
	until, _ := strconv.ParseInt(os.Getenv(envFairUntil), 10, 64)
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	time.Sleep(time.Until(time.UnixMilli(start)))
	var rep fairReport
	var mu sync.Mutex
	var lat []time.Duration
	var ok, errs atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().UnixMilli() < until {
				t0 := time.Now()
				_, err := st.Governance().Use(context.Background(), store.UseRequest{SessionID: id, Tools: []string{"read_file"}})
				mine = append(mine, time.Since(t0))
				if err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						rep.FirstErr = err.Error()
						mu.Unlock()
					}
					continue
				}
				ok.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	st.Close()
	slices.Sort(lat)
	rep.OK, rep.Errors = ok.Load(), errs.Load()
	if len(lat) > 0 {
		rep.MaxWait = float64(lat[len(lat)-1].Microseconds()) / 1000
		rep.P99 = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	os.Exit(0)
}

func TestMultiProcessFairness(t *testing.T) {
	skipShort(t)
	seconds := 2
	full := false
	if v := os.Getenv("SESSIONSTORE_FAIRNESS_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SESSIONSTORE_FAIRNESS_SECONDS=%q: want a positive integer", v)
		}
		seconds, full = n, true
	}
	path := filepath.Join(t.TempDir(), "fair.db")
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Governance().Create(context.Background(), store.CreateRequest{
		AgentID: "fair", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 40, TimeLimit: 24 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(500 * time.Millisecond)
	until := start.Add(time.Duration(seconds) * time.Second)
	const procs = 4
	reports := make([]fairReport, procs)
	var wg sync.WaitGroup
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$", sess.ID)
		cmd.Env = append(os.Environ(), envFairChild+"="+path,
			envFairStart+"="+strconv.FormatInt(start.UnixMilli(), 10),
			envFairUntil+"="+strconv.FormatInt(until.UnixMilli(), 10))
		cmd.Stderr = os.Stderr
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("process %d: %v", i, err)
				return
			}
			if err := json.Unmarshal(out, &reports[i]); err != nil {
				t.Errorf("process %d report %q: %v", i, out, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var total, minOK, maxOK int64
	var worst float64
	minOK = 1 << 62
	for i, r := range reports {
		if r.Errors != 0 {
			t.Errorf("process %d: %d errors reached callers (first: %s)", i, r.Errors, r.FirstErr)
		}
		total += r.OK
		minOK, maxOK = min(minOK, r.OK), max(maxOK, r.OK)
		worst = max(worst, r.MaxWait)
		t.Logf("process %d: %d calls, p99 %.1f ms, worst wait %.1f ms", i, r.OK, r.P99, r.MaxWait)
	}
	got, err := st.Governance().Get(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CallsMade != total {
		t.Fatalf("calls made = %d, acknowledged = %d: the counter must be exact", got.CallsMade, total)
	}
	fairness := float64(minOK) / float64(max(maxOK, 1))
	t.Logf("4 processes x 8 callers, %d s: %d calls (%.0f/s), fairness min/max %.2f, worst wait %.1f ms",
		seconds, total, float64(total)/float64(seconds), fairness, worst)
	if full {
		if fairness < 0.25 {
			t.Errorf("fairness %.2f < 0.25", fairness)
		}
		if worst > 250 {
			t.Errorf("worst wait %.1f ms > 250 ms", worst)
		}
	}
}
