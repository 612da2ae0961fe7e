package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// cpAppend appends n events of about 1 KiB, one commit each.
func cpAppend(t *testing.T, st *Store, key store.SessionKey, from, n int) {
	t.Helper()
	pad := strings.Repeat("p", 1000)
	for i := from; i < from+n; i++ {
		if _, err := st.AgentSessions().AppendEvent(context.Background(), store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: json.RawMessage(`{"pad":"` + pad + `"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// cpOpen opens a store at synchronous=NORMAL on a fresh file, with opts.
func cpOpen(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	path := FreshDBPath(t, "cp.db")
	st, err := Open(context.Background(), path, append([]Option{WithSynchronous(SyncNormal)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestBackgroundCheckpoint: with SQLite's automatic checkpoint off on the
// writer, the checkpointer copies the WAL back into the database file
// without any further write. The database file holding the appended events
// shows the copy: it stays at its initial size until a checkpoint runs.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	st, path := cpOpen(t)
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	cpAppend(t, st, key, 0, 40) // fewer than checkpointCommits: the idle timer
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < before+40*1000 {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes (was %d): no checkpoint after 40 commits", fileSize(t, path), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mid := fileSize(t, path)
	cpAppend(t, st, key, 40, checkpointCommits+10) // the commit count
	for fileSize(t, path) < mid+checkpointCommits*1000 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes (was %d): no checkpoint after %d commits", fileSize(t, path), mid, checkpointCommits+10)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWriterFinishesEachBackgroundRound: after a round of the background
// checkpointer, the writer copies the WAL itself once, after the next
// commit: a round never catches up with a writer that keeps committing
// (TestWALRestartsUnderSteadyWriter), and the log only starts over once
// everything is copied.
func TestWriterFinishesEachBackgroundRound(t *testing.T) {
	ctx := context.Background()
	// No background indexer: a fold's read transaction, open while the
	// writer checkpoints, would keep the PASSIVE checkpoint from copying
	// the frames committed after it began (seen on a loaded machine).
	st, path := cpOpen(t, WithBackgroundIndexer(false))
	if err := st.cp.close(); err != nil { // no background checkpoint from here on
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	cpAppend(t, st, key, 0, 100)
	if got := fileSize(t, path); got != before {
		t.Fatalf("database file grew from %d to %d bytes with no checkpointer", before, got)
	}
	st.cp.rounds.Add(1) // as if a background round had just ended
	cpAppend(t, st, key, 100, 1)
	if got := fileSize(t, path); got < before+100*1000 {
		t.Fatalf("database file %d bytes (was %d): the writer did not checkpoint", got, before)
	}
	// Once per round: the next commits leave the database file alone.
	mid := fileSize(t, path)
	cpAppend(t, st, key, 101, 20)
	if got := fileSize(t, path); got != mid {
		t.Fatalf("database file grew from %d to %d bytes with no new round", mid, got)
	}
}

// walSeq reads the checkpoint sequence number in the header of the WAL at
// path: SQLite increments it each time the log starts over from its
// beginning.
func walSeq(t *testing.T, f *os.File) uint32 {
	t.Helper()
	var h [16]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		t.Fatal(err)
	}
	return uint32(h[12])<<24 | uint32(h[13])<<16 | uint32(h[14])<<8 | uint32(h[15])
}

// TestWALRestartsUnderSteadyWriter: a writer that never pauses (governed
// Uses back to back, the shape of BenchmarkStore's Governance/Use) keeps
// every background checkpoint from copying the frames committed while it
// ran. Before the writer finished each round itself, the log never started
// over: it grew by every commit (4 pages a Use) without bound, and every
// commit extended the -wal file. Each round must now be followed by a
// restart of the log.
func TestWALRestartsUnderSteadyWriter(t *testing.T) {
	ctx := context.Background()
	st, path := cpOpen(t)
	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"t"},
		CallBudget: 1 << 40, TimeLimit: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	req := store.UseRequest{SessionID: sess.ID, AgentID: "a", Tools: []string{"t"}}
	if _, err := gov.Use(ctx, req); err != nil {
		t.Fatal(err)
	}
	wal, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer wal.Close()
	const rounds = 3
	start := st.cp.rounds.Load()
	seq := walSeq(t, wal)
	restarts, uses := 0, 0
	// Until the background checkpointer has run its rounds, and two Uses
	// more: the one after which the writer finishes the last round, and
	// the one that starts the log over.
	for extra := 0; extra < 2; uses++ {
		if uses > 200_000 {
			t.Fatalf("%d background checkpoint rounds in %d Uses", st.cp.rounds.Load()-start, uses)
		}
		if _, err := gov.Use(ctx, req); err != nil {
			t.Fatal(err)
		}
		if s := walSeq(t, wal); s != seq {
			restarts++
			seq = s
		}
		if st.cp.rounds.Load()-start >= rounds {
			extra++
		}
	}
	t.Logf("%d restarts of the log in %d Uses (%d background rounds)", restarts, uses, st.cp.rounds.Load()-start)
	if restarts == 0 {
		t.Fatalf("the log never started over in %d Uses and %d background checkpoint rounds", uses, st.cp.rounds.Load()-start)
	}
}
