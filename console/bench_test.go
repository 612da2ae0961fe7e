package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// Sizes of the large store of BenchmarkLargeStore.
const (
	largeMessages = 100_000
	largeSessions = 100_000
	// One governed session in largeClosedEvery is closed.
	largeClosedEvery = 10_000
)

// BenchmarkLargeStore measures the console's pages on a store with a
// conversation of 100,000 messages and 100,000 governed sessions (SQLite,
// read-only). Every page reads one page of rows (keyset paging), so its
// time does not grow with the store; the overview and /metrics scan the
// listings (bounded by the console's scan limit) and are reported for
// comparison.
//
//	go test -run '^$' -bench LargeStore -benchtime 20x ./console
func BenchmarkLargeStore(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "large.db")
	clock := storetest.NewClock()
	w, err := sqlstore.Open(ctx, path, sqlstore.WithClock(clock.Now), sqlstore.WithSynchronous(sqlstore.SyncOff))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	conv := store.NewConversation("big")
	if _, err := w.Conversations().Save(ctx, conv); err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Message, 0, store.MaxAppendMessages)
	for i := range largeMessages {
		batch = append(batch, store.UserMessage(fmt.Sprintf("message %d: %s", i, strings.Repeat("x", 200))))
		if len(batch) == cap(batch) {
			if _, err := w.Conversations().AppendMessages(ctx, "big", batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	restoreLargeSessions(b, w, clock)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d messages and %d sessions in %v", largeMessages, largeSessions, time.Since(start).Round(time.Millisecond))

	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true), sqlstore.WithClock(clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	defer ro.Close()
	h, err := console.New(ro, console.Options{ReadOnly: true, Clock: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	pages := []benchPage{
		{"conversation/latest", "/conversations/big", 400 << 10},
		{"conversation/middle", "/conversations/big?from=50000", 400 << 10},
		{"conversation/before", "/conversations/big?before=75000", 400 << 10},
		{"conversation/json", "/conversations/big?from=99900&format=json", 400 << 10},
		{"governed/first", "/governed", 200 << 10},
		{"governed/middle", "/governed?after=s-050000", 200 << 10},
		{"governed/active", "/governed?status=active&after=s-050000", 200 << 10},
		{"governed/agent", "/governed?agent=agent-250", 200 << 10},
		{"governed/closed", "/governed?status=closed", 200 << 10},
		{"governed/tool-filter", "/governed?tool=read&after=s-090000", 200 << 10},
		{"governed/detail", "/governed/s-054321", 200 << 10},
		{"overview", "/", 200 << 10},
		{"metrics", "/metrics", 200 << 10},
	}
	benchPages(b, h, pages)
}

// restoreLargeSessions writes largeSessions governed sessions of 500
// agents (ids s-000000 ...) into w.
func restoreLargeSessions(b *testing.B, w store.Store, clock *storetest.Clock) {
	b.Helper()
	sessions := make([]store.Session, 0, largeSessions)
	now := clock.Now()
	for i := range largeSessions {
		req, err := store.CreateRequest{AgentID: fmt.Sprintf("agent-%03d", i%500), AuthorizedTools: []string{"read", "search"}, CallBudget: 100, TimeLimit: time.Hour}.Normalize()
		if err != nil {
			b.Fatal(err)
		}
		s := req.NewSession(fmt.Sprintf("s-%06d", i), now)
		s.CallsMade = int64(i % 100)
		if i%largeClosedEvery == largeClosedEvery-1 {
			s.Status = store.StatusClosed // a rare status: 10 of 100,000
		}
		sessions = append(sessions, s)
	}
	if _, err := w.Governance().Restore(context.Background(), store.RestoreRequest{Sessions: sessions}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLargeStoreGovernedPostgres measures the governed-session list
// pages on PostgreSQL with 100,000 governed sessions (read-only store):
// a keyset page reads one page of the (tenant, id) index, at the start
// and in the middle (skipped without a server):
//
//	scripts/with-postgres.sh go test -run '^$' -bench LargeStoreGovernedPostgres -benchtime 20x ./console
func BenchmarkLargeStoreGovernedPostgres(b *testing.B) {
	pgtest.ServerURL(b)
	ctx := context.Background()
	loc := newSchema(b)
	clock := storetest.NewClock()
	w, err := pgstore.Open(ctx, loc, pgstore.WithClock(clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	restoreLargeSessions(b, w, clock)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	// The statistics autovacuum gathers on a live database, at once.
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE governed_sessions"); err != nil {
		b.Fatal(err)
	}
	conn.Close(ctx)
	ro, err := pgstore.Open(ctx, loc, pgstore.WithReadOnly(true), pgstore.WithClock(clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	defer ro.Close()
	h, err := console.New(ro, console.Options{ReadOnly: true, Clock: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	benchPages(b, h, []benchPage{
		{"governed/first", "/governed", 200 << 10},
		{"governed/middle", "/governed?after=s-050000", 200 << 10},
		{"governed/active", "/governed?status=active&after=s-050000", 200 << 10},
		{"governed/agent", "/governed?agent=agent-250", 200 << 10},
	})
}

// benchPage is a page a benchmark fetches, and the most bytes it may
// carry (a page must not carry the whole store).
type benchPage struct {
	name, path string
	maxBytes   int
}

// benchPages runs one sub-benchmark per page.
func benchPages(b *testing.B, h http.Handler, pages []benchPage) {
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d", p.path, rec.Code)
				}
				if n := rec.Body.Len(); n > p.maxBytes {
					b.Fatalf("GET %s: %d bytes, more than one page", p.path, n)
				}
			}
		})
	}
}
