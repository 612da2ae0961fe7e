package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Governed Use calls spread over many sessions at once: sessions of one
// agent and of many agents, in two stores and in several processes. A
// backend may decide concurrent calls of different sessions together (one
// transaction for several, as pgstore's batches do); every decision must
// stay exactly what one call at a time gives.

func init() {
	registerRole("use-spread", useSpreadRole)
}

// spreadTally counts the outcomes of one session's calls.
type spreadTally struct {
	OK      int64 `json:"ok"`
	Budget  int64 `json:"budget"`
	Tool    int64 `json:"tool"`
	Rate    int64 `json:"rate"`
	Closed  int64 `json:"closed"`
	Expired int64 `json:"expired"`
}

func (c spreadTally) calls() int64 { return c.OK + c.Budget + c.Tool + c.Rate + c.Closed + c.Expired }

// spreadTool is the tool of call i of worker w: every seventh call names a
// tool no session allows.
func spreadTool(w, i, calls int) string {
	if (w*calls+i)%7 == 3 {
		return "delete_file"
	}
	return "read_file"
}

// spreadSession is the index of the session that call i of worker w uses.
func spreadSession(w, i, calls, sessions int) int { return (w*calls + i) % sessions }

// spreadAttempts counts, per session, the calls of workers [from,
// from+workers) that name an allowed tool and those that name another.
func spreadAttempts(allowed, forbidden []int64, from, workers, calls int) {
	for w := from; w < from+workers; w++ {
		for i := range calls {
			s := spreadSession(w, i, calls, len(allowed))
			if spreadTool(w, i, calls) == "read_file" {
				allowed[s]++
			} else {
				forbidden[s]++
			}
		}
	}
}

// spreadUses runs workers goroutines numbered from from, each making calls
// Uses on ids (see spreadSession and spreadTool), and tallies the outcomes
// per session; any other error is returned.
func spreadUses(ctx context.Context, st store.Store, ids []string, from, workers, calls int) ([]spreadTally, error) {
	tallies := make([]spreadTally, len(ids))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := from; w < from+workers; w++ {
		wg.Go(func() {
			<-start
			for i := range calls {
				s := spreadSession(w, i, calls, len(ids))
				_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: ids[s], Tools: []string{spreadTool(w, i, calls)}})
				mu.Lock()
				c := &tallies[s]
				switch {
				case err == nil:
					c.OK++
				case errors.Is(err, store.ErrBudgetExceeded):
					c.Budget++
				case errors.Is(err, store.ErrToolNotAuthorized):
					c.Tool++
				case errors.Is(err, store.ErrRateLimited):
					c.Rate++
				case errors.Is(err, store.ErrClosed):
					c.Closed++
				case errors.Is(err, store.ErrExpired):
					c.Expired++
				default:
					if firstErr == nil {
						firstErr = fmt.Errorf("use of %s: %w", ids[s], err)
					}
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return tallies, firstErr
}

// useSpreadRole: args are the session ids (comma-separated), the first
// worker's number, workers, calls per worker. It reports the tallies
// ([]spreadTally, one per id) and fails on any unexpected error.
func useSpreadRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 4 {
		return fmt.Errorf("use-spread wants 4 args, got %d", len(args))
	}
	from, err1 := strconv.Atoi(args[1])
	workers, err2 := strconv.Atoi(args[2])
	calls, err3 := strconv.Atoi(args[3])
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	tallies, err := spreadUses(ctx, st, strings.Split(args[0], ","), from, workers, calls)
	if err != nil {
		return err
	}
	return report(out, tallies)
}

// spreadKind is what a session of the fixture is.
type spreadKind int

const (
	spreadActive spreadKind = iota
	spreadRated             // a rate limit below its budget
	spreadClosed
	spreadExpired
)

// spreadFixture creates the sessions: eight of one agent (two of them
// rate-limited, one closed), and one for each of eight agents (one
// rate-limited, one expired), budgets differing; ids in creation order.
func (e *env) spreadFixture() ([]store.Session, []spreadKind) {
	e.t.Helper()
	var sessions []store.Session
	var kinds []spreadKind
	add := func(agent string, i int, kind spreadKind) {
		req := baseRequest()
		req.AgentID = agent
		req.AuthorizedTools = []string{"read_file"}
		req.CallBudget = int64(20 + 3*i)
		// Helper processes run on the real clock shifted to the test
		// clock's: the sessions outlive them.
		req.TimeLimit = 100 * 365 * 24 * time.Hour
		req.RateWindow = 100 * 365 * 24 * time.Hour
		switch kind {
		case spreadRated:
			req.CallBudget, req.RateLimit = 1000, int64(12+i)
		case spreadExpired:
			req.TimeLimit = time.Second
		}
		s := e.create(req)
		if kind == spreadClosed {
			var err error
			if s, err = e.gov().Close(e.ctx, s.ID); err != nil {
				e.t.Fatalf("Close: %v", err)
			}
		}
		sessions = append(sessions, s)
		kinds = append(kinds, kind)
	}
	fleet := "fleet-" + strconv.FormatInt(nextID.Add(1), 10)
	for i := range 8 {
		kind := spreadActive
		switch i {
		case 2, 5:
			kind = spreadRated
		case 6:
			kind = spreadClosed
		}
		add(fleet, i, kind)
	}
	for i := range 8 {
		kind := spreadActive
		switch i {
		case 3:
			kind = spreadRated
		case 7:
			kind = spreadExpired
		}
		add("spread-"+strconv.FormatInt(nextID.Add(1), 10), 8+i, kind)
	}
	e.clock.Advance(2 * time.Second) // the expired one is past its time
	return sessions, kinds
}

// checkSpread checks the tallies of every process against what one call at
// a time gives, the stored counters, and the audit trail: exactly one use
// event per call, its outcome the call's.
func (e *env) checkSpread(sessions []store.Session, kinds []spreadKind, allowed, forbidden []int64, tallies ...[]spreadTally) {
	t := e.t
	t.Helper()
	total := make([]spreadTally, len(sessions))
	for _, ts := range tallies {
		for i, c := range ts {
			total[i].OK += c.OK
			total[i].Budget += c.Budget
			total[i].Tool += c.Tool
			total[i].Rate += c.Rate
			total[i].Closed += c.Closed
			total[i].Expired += c.Expired
		}
	}
	uses := map[string]map[string]int64{} // session → outcome → use events
	for _, ev := range e.auditAll("") {
		if ev.Kind == store.AuditUse {
			if uses[ev.SessionID] == nil {
				uses[ev.SessionID] = map[string]int64{}
			}
			uses[ev.SessionID][ev.Outcome]++
		}
	}
	for i, s := range sessions {
		c, made := total[i], allowed[i]+forbidden[i]
		if c.calls() != made {
			t.Errorf("session %d: %d calls accounted, %d made (%+v)", i, c.calls(), made, c)
		}
		var want spreadTally
		switch kinds[i] {
		case spreadActive:
			want.OK = min(allowed[i], s.CallBudget)
			if c.Rate != 0 || c.Closed != 0 || c.Expired != 0 || c.Budget < allowed[i]-want.OK {
				t.Errorf("session %d (budget %d): refusals %+v", i, s.CallBudget, c)
			}
		case spreadRated:
			want.OK = min(allowed[i], s.RateLimit)
			if c.Budget != 0 || c.Closed != 0 || c.Expired != 0 || c.Rate < allowed[i]-want.OK {
				t.Errorf("session %d (rate limit %d): refusals %+v", i, s.RateLimit, c)
			}
		case spreadClosed:
			want.Closed = made
		case spreadExpired:
			want.Expired = made
		}
		if c.OK != want.OK || (kinds[i] >= spreadClosed && c != want) {
			t.Errorf("session %d: %+v, want %d allowed of %d attempts (%+v)", i, c, want.OK, allowed[i], want)
		}
		got := e.get(s.ID)
		if got.CallsMade != want.OK {
			t.Errorf("session %d: stored calls made %d, want %d", i, got.CallsMade, want.OK)
		}
		var events int64
		for _, n := range uses[s.ID] {
			events += n
		}
		if events != made || uses[s.ID][store.OutcomeAllowed] != want.OK {
			t.Errorf("session %d: %d use events (%v) for %d calls, %d allowed", i, events, uses[s.ID], made, want.OK)
		}
	}
	if rep := e.verifyAudit(); rep.Events == 0 {
		t.Error("no audit event")
	}
	if st := e.get(sessions[len(sessions)-1].ID).Status; st != store.StatusExpired {
		t.Errorf("expired session reads %s", st)
	}
}

func spreadIDs(sessions []store.Session) []string {
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
	}
	return ids
}

// testUseSpreadExact: 24 goroutines in two stores spread their calls over
// the sessions of one agent and of eight agents (budgets, rate limits,
// forbidden tools, a closed and an expired session): every session grants
// exactly what one call at a time would, and the audit trail holds one use
// event per call.
func testUseSpreadExact(t *testing.T, e *env) {
	const workers, calls = 12, 40
	sessions, kinds := e.spreadFixture()
	ids := spreadIDs(sessions)
	allowed, forbidden := make([]int64, len(ids)), make([]int64, len(ids))
	spreadAttempts(allowed, forbidden, 0, 2*workers, calls)
	second := e.open()
	var a, b []spreadTally
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { a, errA = spreadUses(e.ctx, e.st, ids, 0, workers, calls) })
	wg.Go(func() { b, errB = spreadUses(e.ctx, second, ids, workers, workers, calls) })
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	e.checkSpread(sessions, kinds, allowed, forbidden, a, b)
}

// testUseSpreadMultiProcess: the same, in three processes at once.
func testUseSpreadMultiProcess(t *testing.T, e *env) {
	const procs, workers, calls = 2, 8, 40
	sessions, kinds := e.spreadFixture()
	ids := spreadIDs(sessions)
	allowed, forbidden := make([]int64, len(ids)), make([]int64, len(ids))
	spreadAttempts(allowed, forbidden, 0, (procs+1)*workers, calls)
	results := make([][]spreadTally, procs)
	var wg sync.WaitGroup
	defer wg.Wait() // also when the parent fails early
	for p := range procs {
		cmd, stdout := e.spawn("use-spread", strings.Join(ids, ","), strconv.Itoa((p+1)*workers), strconv.Itoa(workers), strconv.Itoa(calls))
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var r []spreadTally
				if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
					results[p] = r
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper process %d: %v", p, err)
			}
		})
	}
	mine, err := spreadUses(e.ctx, e.st, ids, 0, workers, calls)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range results {
		if len(r) != len(ids) {
			t.Fatalf("helper process %d reported %d tallies", p, len(r))
		}
	}
	e.checkSpread(sessions, kinds, allowed, forbidden, append(results, mine)...)
}
