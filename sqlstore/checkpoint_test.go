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

// cpOpen opens a store at synchronous=NORMAL on a fresh file.
func cpOpen(t *testing.T) (*Store, string) {
	t.Helper()
	path := FreshDBPath(t, "cp.db")
	st, err := Open(context.Background(), path, WithSynchronous(SyncNormal))
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

// TestWriterCheckpointsWhenTheBackgroundFallsBehind: when the last
// background checkpoint left more than checkpointMaxFrames behind, the
// writer copies the WAL itself before it answers the commit's callers.
func TestWriterCheckpointsWhenTheBackgroundFallsBehind(t *testing.T) {
	ctx := context.Background()
	st, path := cpOpen(t)
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
	st.cp.behind.Store(checkpointMaxFrames + 1)
	cpAppend(t, st, key, 100, 1)
	if got := fileSize(t, path); got < before+100*1000 {
		t.Fatalf("database file %d bytes (was %d): the writer did not checkpoint", got, before)
	}
	if b := st.cp.behind.Load(); b != 0 {
		t.Fatalf("behind = %d after the writer's checkpoint", b)
	}
}
