package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// lockHolder is another program writing to the database: a plain
// connection that holds SQLite's write lock until released. It does not
// take the store's file lock, so the store meets SQLITE_BUSY.
type lockHolder struct {
	db   *sqlx.DB
	conn *sqlx.Conn
}

func holdWriteLock(t *testing.T, path string) *lockHolder {
	t.Helper()
	cfg := defaultConfig()
	cfg.busyTimeout = 0
	db, err := sqlx.Open(driverName, writeDSN(path, &cfg))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	h := &lockHolder{db: db, conn: conn}
	t.Cleanup(h.release)
	return h
}

func (h *lockHolder) release() {
	if h.conn == nil {
		return
	}
	h.conn.ExecContext(context.Background(), "ROLLBACK")
	h.conn.Close()
	h.db.Close()
	h.conn = nil
}

func openTestStore(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	path := FreshDBPath(t, "w.db")
	st, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func createSession(t *testing.T, st *Store, budget int64) store.Session {
	t.Helper()
	s, err := st.Governance().Create(context.Background(), store.CreateRequest{
		AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: budget, TimeLimit: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A lock held by another program for longer than busy_timeout is waited
// out by retrying the whole transaction; the caller never sees busy.
func TestBusyIsRetriedAsWholeTransaction(t *testing.T) {
	st, path := openTestStore(t, WithBusyTimeout(20*time.Millisecond), WithBusyRetry(30*time.Second))
	s := createSession(t, st, 10)
	h := holdWriteLock(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := st.Governance().Use(context.Background(), store.UseRequest{SessionID: s.ID, Tools: []string{"t"}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Use returned while the database was locked: %v", err)
	case <-time.After(200 * time.Millisecond): // several busy timeouts
	}
	h.release()
	if err := <-done; err != nil {
		t.Fatalf("Use after the lock was released: %v", err)
	}
	got, _ := st.Governance().Get(context.Background(), s.ID)
	if got.CallsMade != 1 {
		t.Fatalf("calls made = %d, want 1 (retries must not double count)", got.CallsMade)
	}
}

// When the retry budget runs out the caller gets ErrBusy and nothing is
// written.
func TestBusyRetryIsBounded(t *testing.T) {
	st, path := openTestStore(t, WithBusyTimeout(10*time.Millisecond), WithBusyRetry(100*time.Millisecond))
	s := createSession(t, st, 10)
	h := holdWriteLock(t, path)
	_, err := st.Governance().Use(context.Background(), store.UseRequest{SessionID: s.ID, Tools: []string{"t"}})
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	h.release()
	got, _ := st.Governance().Get(context.Background(), s.ID)
	if got.CallsMade != 0 {
		t.Fatalf("calls made = %d after a busy failure", got.CallsMade)
	}
}

// A caller whose context ends while it waits is withdrawn: it gets the
// context error and its write never happens.
func TestCanceledWaiterIsWithdrawn(t *testing.T) {
	st, path := openTestStore(t, WithBusyTimeout(10*time.Millisecond))
	s := createSession(t, st, 10)
	h := holdWriteLock(t, path)
	use := func(ctx context.Context) error {
		_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"t"}})
		return err
	}
	var wg sync.WaitGroup
	var leaderErr error
	wg.Go(func() { leaderErr = use(context.Background()) })
	time.Sleep(50 * time.Millisecond) // let the leader block on the lock
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := use(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled waiter got %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("canceled waiter returned only after %v", waited)
	}
	h.release()
	wg.Wait()
	if leaderErr != nil {
		t.Fatal(leaderErr)
	}
	got, _ := st.Governance().Get(context.Background(), s.ID)
	if got.CallsMade != 1 {
		t.Fatalf("calls made = %d, want 1: the withdrawn request must not run", got.CallsMade)
	}
}

// One request failing inside a batch rolls back only itself.
func TestBatchRequestFailureIsIsolated(t *testing.T) {
	st, _ := openTestStore(t)
	s := createSession(t, st, 1000)
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range 64 {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = st.Governance().Use(context.Background(), store.UseRequest{SessionID: s.ID, Tools: []string{"t"}})
				return
			}
			// A request that writes, then fails: its insert must vanish.
			errs[i] = st.write(context.Background(), func(tx *wtx) error {
				if _, err := tx.exec(govCloseAgentSQL, "a", int64(0), ""); err != nil {
					return err
				}
				return errors.New("boom")
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 0 && err != nil {
			t.Fatalf("good request %d failed: %v", i, err)
		}
		if i%2 == 1 && (err == nil || err.Error() != "boom") {
			t.Fatalf("bad request %d: %v", i, err)
		}
	}
	got, _ := st.Governance().Get(context.Background(), s.ID)
	if got.CallsMade != 32 || got.Status != store.StatusActive {
		t.Fatalf("after batch: calls %d status %s; want 32 active", got.CallsMade, got.Status)
	}
}

// Close answers queued requests and refuses new ones.
func TestCloseRefusesNewWrites(t *testing.T) {
	st, _ := openTestStore(t)
	s := createSession(t, st, 10)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := st.Governance().Use(context.Background(), store.UseRequest{SessionID: s.ID, Tools: []string{"t"}})
	if !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("got %v, want ErrStoreClosed", err)
	}
	if _, err := st.Governance().Get(context.Background(), s.ID); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}
