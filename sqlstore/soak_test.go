package sqlstore_test

// Concurrency soak: 4 processes × 8 goroutines on one file mix Use (plain
// and with request ids, replayed), message appends and reads, Get, List,
// Create+Close and Cleanup for a bounded time. Budgets are exact (the
// successes the processes counted equal the stored counters, and exhausted
// budgets equal their limit), histories are gapless and hold exactly the
// acknowledged appends, no busy error ever reaches a caller, and no error
// other than the expected refusals appears.
//
//	SQLSTORE_SOAK=60s go test ./sqlstore -run TestSoak -v

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// Soak sessions: two small budgets that run out early (exactness at the
// limit) and two large ones that do not (exact counting throughout).
var soakBudgets = map[string]int64{"small-0": 40, "small-1": 150, "large-0": 1 << 40, "large-1": 1 << 40}

// Soak conversations, appended to by every goroutine.
var soakConversations = []string{"conv-0", "conv-1"}

var _ = registerRelRole("soak", soakRole)

type soakReport struct {
	OK         map[string]int64 `json:"ok"`
	Refused    map[string]int64 `json:"refused"` // budget refusals
	Appended   map[string]int64 `json:"appended"`
	Ops        map[string]int64 `json:"ops"`
	Unexpected []string         `json:"unexpected"`
}

// soakRole: args are path, goroutines, duration, process index.
func soakRole(ctx context.Context, args []string, out *lineWriter) error {
	workers, _ := strconv.Atoi(args[1])
	d, err := time.ParseDuration(args[2])
	if err != nil {
		return err
	}
	st, err := sqlstore.Open(ctx, args[0])
	if err != nil {
		return err
	}
	defer st.Close()
	var mu sync.Mutex
	rep := soakReport{OK: map[string]int64{}, Refused: map[string]int64{}, Appended: map[string]int64{}, Ops: map[string]int64{}}
	unexpected := func(op string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(rep.Unexpected) < 20 {
			rep.Unexpected = append(rep.Unexpected, fmt.Sprintf("%s: %v", op, err))
		}
	}
	ids := slices.Sorted(mapKeys(soakBudgets))
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			ok := map[string]int64{}
			refused := map[string]int64{}
			appended := map[string]int64{}
			ops := map[string]int64{}
			gov := st.Governance()
			for i := 0; time.Now().Before(deadline); i++ {
				id := ids[rng.IntN(len(ids))]
				tools := make([]string, 1+rng.IntN(3))
				for j := range tools {
					tools[j] = "read_file"
				}
				switch p := rng.IntN(100); {
				case p < 30:
					ops["use"]++
					_, err := gov.Use(ctx, store.UseRequest{SessionID: id, Tools: tools})
					switch {
					case err == nil:
						ok[id] += int64(len(tools))
					case errors.Is(err, store.ErrBudgetExceeded):
						refused[id]++
					default:
						unexpected("use", err)
					}
				case p < 38:
					ops["use-request-id"]++
					req := store.UseRequest{SessionID: id, Tools: tools, RequestID: fmt.Sprintf("p%s-w%d-%d", args[3], w, i)}
					_, err := gov.Use(ctx, req)
					switch {
					case err == nil:
						ok[id] += int64(len(tools))
					case errors.Is(err, store.ErrBudgetExceeded):
						refused[id]++
					default:
						unexpected("use-request-id", err)
					}
					// The replay returns the same outcome and consumes nothing.
					_, err2 := gov.Use(ctx, req)
					if (err == nil) != (err2 == nil) || (err != nil && !errors.Is(err2, store.ErrBudgetExceeded)) {
						unexpected("replay", fmt.Errorf("first %v, replay %v", err, err2))
					}
				case p < 48:
					ops["append"]++
					cid := soakConversations[rng.IntN(len(soakConversations))]
					msgs := make([]store.Message, 1+rng.IntN(2))
					for j := range msgs {
						msgs[j] = store.UserMessage(fmt.Sprintf("p%s w%d i%d m%d", args[3], w, i, j))
					}
					if _, err := st.Conversations().AppendMessages(ctx, cid, msgs...); err != nil {
						unexpected("append", err)
					} else {
						appended[cid] += int64(len(msgs))
					}
				case p < 53:
					ops["read-messages"]++
					cid := soakConversations[rng.IntN(len(soakConversations))]
					last, err := st.Conversations().LastMessages(ctx, cid, 20)
					if err != nil {
						unexpected("last messages", err)
					}
					for k := 1; k < len(last); k++ {
						if last[k].Seq != last[k-1].Seq+1 {
							unexpected("last messages", fmt.Errorf("gap between %d and %d", last[k-1].Seq, last[k].Seq))
						}
					}
				case p < 65:
					ops["get"]++
					s, err := gov.Get(ctx, id)
					if err != nil {
						unexpected("get", err)
					} else if s.CallsMade > s.CallBudget {
						unexpected("get", fmt.Errorf("%s: %d calls over a budget of %d", id, s.CallsMade, s.CallBudget))
					}
				case p < 75:
					ops["list"]++
					after := ""
					for range 100 {
						page, err := gov.List(ctx, store.ListFilter{After: after, Limit: 50})
						if err != nil {
							unexpected("list", err)
							break
						}
						for k := 1; k < len(page.Items); k++ {
							if page.Items[k-1].ID >= page.Items[k].ID {
								unexpected("list", fmt.Errorf("out of order: %s, %s", page.Items[k-1].ID, page.Items[k].ID))
							}
						}
						if page.Next == "" {
							break
						}
						after = page.Next
					}
				case p < 95:
					ops["create-close"]++
					cid := fmt.Sprintf("churn-p%s-w%d-%d", args[3], w, i)
					req := longSession(cid, 5)
					req.AgentID = "churn"
					if _, err := gov.Create(ctx, req); err != nil {
						unexpected("create", err)
						continue
					}
					if _, err := gov.Use(ctx, store.UseRequest{SessionID: cid, Tools: tools}); err != nil {
						unexpected("use churn", err)
					}
					if _, err := gov.Close(ctx, cid); err != nil {
						unexpected("close", err)
					}
				default:
					ops["cleanup"]++
					if _, err := gov.Cleanup(ctx); err != nil {
						unexpected("cleanup", err)
					}
				}
			}
			mu.Lock()
			for k, v := range ok {
				rep.OK[k] += v
			}
			for k, v := range appended {
				rep.Appended[k] += v
			}
			for k, v := range refused {
				rep.Refused[k] += v
			}
			for k, v := range ops {
				rep.Ops[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out.JSON(rep)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestSoak(t *testing.T) {
	skipShort(t)
	const procs, workers = 4, 8
	d := envDuration("SQLSTORE_SOAK", 3*time.Second)
	if sampleReliability && os.Getenv("SQLSTORE_SOAK") == "" {
		d = 2 * time.Second
	}
	ctx := context.Background()
	path := t.TempDir() + "/soak.db"
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for id, b := range soakBudgets {
		if _, err := st.Governance().Create(ctx, longSession(id, b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range soakConversations {
		if _, err := st.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	hs := make([]*helper, procs)
	for i := range hs {
		hs[i] = startHelper(t, "soak", path, strconv.Itoa(workers), d.String(), strconv.Itoa(i))
	}
	total := soakReport{OK: map[string]int64{}, Refused: map[string]int64{}, Appended: map[string]int64{}, Ops: map[string]int64{}}
	for i, h := range hs {
		lines, err := h.wait()
		if err != nil || len(lines) != 1 {
			t.Fatalf("process %d: %v %q", i, err, lines)
		}
		var rep soakReport
		if err := jsonUnmarshal(lines[0], &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Unexpected) > 0 {
			t.Errorf("process %d: unexpected errors: %q", i, rep.Unexpected)
		}
		for k, v := range rep.OK {
			total.OK[k] += v
		}
		for k, v := range rep.Appended {
			total.Appended[k] += v
		}
		for k, v := range rep.Refused {
			total.Refused[k] += v
		}
		for k, v := range rep.Ops {
			total.Ops[k] += v
		}
	}
	var ops int64
	for _, v := range total.Ops {
		ops += v
	}
	t.Logf("%d processes × %d goroutines for %v: %d operations %v", procs, workers, d, ops, total.Ops)
	st, err = sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, budget := range soakBudgets {
		s, err := st.Governance().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.CallsMade != total.OK[id] {
			t.Errorf("%s: %d calls stored, %d acknowledged", id, s.CallsMade, total.OK[id])
		}
		// A budget refusal means a batch of at most 3 calls did not fit.
		if total.Refused[id] > 0 && s.CallsMade <= budget-3 {
			t.Errorf("%s: %d budget refusals with %d of %d calls made", id, total.Refused[id], s.CallsMade, budget)
		}
		if budget < 1000 {
			t.Logf("%s: %d of %d calls made, %d refusals", id, s.CallsMade, budget, total.Refused[id])
		}
	}
	for _, id := range soakConversations {
		n, err := st.Conversations().MessageCount(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n != total.Appended[id] {
			t.Errorf("%s: %d messages stored, %d acknowledged", id, n, total.Appended[id])
		}
		for from := int64(0); from < n; from += store.MaxMessagePage {
			page, err := st.Conversations().Messages(ctx, id, from, store.MaxMessagePage)
			if err != nil {
				t.Fatal(err)
			}
			for k, m := range page {
				if m.Seq != from+int64(k) {
					t.Fatalf("%s: message %d has seq %d", id, from+int64(k), m.Seq)
				}
			}
		}
	}
	st.Close()
	integrityCheck(t, path)
}
