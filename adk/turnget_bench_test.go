package adk_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkTurnGet reads the runner turn's whole session (the seeded
// session of 200 events plus 100 turns' 200, about 400 events, among
// 20,000 others') through the service without its read cache, one read
// per iteration: the cost of the turn's get after a write, which no cache
// serves, alone, for CPU profiles and allocation counts:
//
//	cd adk && go test -run '^$' -bench TurnGet -benchtime 2000x -benchmem -cpuprofile get.prof
func BenchmarkTurnGet(b *testing.B) {
	ctx := context.Background()
	sub := seedTurnSession(b)
	t, err := openAdapterNoCache(ctx, sub, "NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	want := benchkit.TurnEvents + 200
	b.ReportAllocs()
	for b.Loop() {
		_, n, err := t.Read(ctx, "bench", "u", "t0")
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("read %d events, want %d", n, want)
		}
	}
}

// BenchmarkTurnGetAfterWrite is BenchmarkTurnGet with a commit before
// each read (untimed: a state update of another session), as in the
// runner turn, where the read follows the previous turn's appends. A
// commit makes every read connection drop its page cache (SQLite resets a
// reader's cache when the log changed), so the read takes its pages from
// the file again, which BenchmarkTurnGet's reads of an unchanged database
// do not:
//
//	cd adk && go test -run '^$' -bench TurnGetAfterWrite -benchtime 1000x -benchmem -cpuprofile get.prof
func BenchmarkTurnGetAfterWrite(b *testing.B) {
	ctx := context.Background()
	sub := seedTurnSession(b)
	st, err := sqlstore.Open(ctx, filepath.Join(sub, "sessions.db"), syncOption("NORMAL"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	t := &benchkit.ServiceTarget{Svc: adk.NewWithOptions(st, adk.Options{ReadCacheEvents: -1})}
	other := store.SessionKey{App: "bench", User: "u", Session: "o0"}
	want := benchkit.TurnEvents + 200
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if _, err := st.AgentSessions().UpdateState(ctx, store.UpdateStateRequest{Key: other,
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"n": json.RawMessage(strconv.Itoa(i))}}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_, n, err := t.Read(ctx, "bench", "u", "t0")
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("read %d events, want %d", n, want)
		}
	}
}

// BenchmarkTurnGetAfterAppend is the runner turn's get as the runner
// makes it: through the service with its read cache, right after the
// previous turn's two appends through the handle read (untimed), on the
// seeded session of BenchmarkTurnGet (about 400 events, growing by two
// per iteration). The appends extend the session the service keeps, so
// the get reads the session row and its state and no event (see
// store.GetAgentSessionRequest.Continue):
//
//	cd adk && go test -run '^$' -bench TurnGetAfterAppend -benchtime 200x -benchmem
func BenchmarkTurnGetAfterAppend(b *testing.B) {
	ctx := context.Background()
	sub := seedTurnSession(b)
	t, err := openAdapter(ctx, sub, "NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	want := benchkit.TurnEvents + 200
	h, n, err := t.Read(ctx, "bench", "u", "t0")
	if err != nil {
		b.Fatal(err)
	}
	if n != want {
		b.Fatalf("read %d events, want %d", n, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for range 2 {
			if err := t.Append(ctx, h, benchkit.TurnEvent(want)); err != nil {
				b.Fatal(err)
			}
			want++
		}
		b.StartTimer()
		h, n, err = t.Read(ctx, "bench", "u", "t0")
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("read %d events, want %d", n, want)
		}
	}
}

// seedTurnSession writes the runner turn's store in a directory of its
// own and returns the directory: the comparison's seeded session of 200
// events among 20,000 others', and 100 turns' 200 more (the session a
// runner reads at the comparison's last turns).
func seedTurnSession(b *testing.B) string {
	ctx := context.Background()
	sub := benchkit.Dir(b)
	seed, err := openAdapter(ctx, sub, "OFF")
	if err != nil {
		b.Fatal(err)
	}
	if err := benchkit.SeedTurn(ctx, seed); err != nil {
		b.Fatal(err)
	}
	for turn := range 100 {
		if _, err := benchkit.Turn(ctx, seed, "t0", benchkit.TurnEvents, turn); err != nil {
			b.Fatal(err)
		}
	}
	if err := seed.Close(); err != nil {
		b.Fatal(err)
	}
	return sub
}
