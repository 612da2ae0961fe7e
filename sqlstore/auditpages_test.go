package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// walFrames reads the WAL file at path and counts the frames of its
// current generation (those whose salts match the header's) and, among
// them, the commit frames (a transaction's last frame). Every page a
// transaction writes is one frame, so frames per commit is the pages a
// transaction writes, a figure that does not depend on the disk.
func walFrames(t *testing.T, path string) (frames, commits int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 32 {
		return 0, 0
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	salt := b[16:24]
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		h := b[off : off+24]
		if string(h[8:16]) != string(salt) {
			break
		}
		frames++
		if binary.BigEndian.Uint32(h[4:8]) != 0 {
			commits++
		}
	}
	return frames, commits
}

// pagesPerUse runs n governed Uses of one session, each its own
// transaction, and returns the pages (WAL frames) they wrote per Use. It
// starts from an empty WAL and retries when a checkpoint restarted the
// WAL while it ran (the commits it counts are then fewer than n).
func pagesPerUse(t *testing.T, n int, opts ...sqlstore.Option) float64 {
	t.Helper()
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "pages.db")
	st, err := sqlstore.Open(ctx, path, append([]sqlstore.Option{sqlstore.WithSynchronous(sqlstore.SyncOff)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Other sessions of the same agent and of others, so that the
	// session's row and its events sit among other rows (fewer under the
	// race detector, which slows every statement).
	others := 200
	if raceDetector {
		others = 101
	}
	for i := range others {
		req := longSession(fmt.Sprintf("s%03d", i), 1_000_000)
		req.AgentID = fmt.Sprintf("agent-%d", i%3)
		if _, err := st.Governance().Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range others {
		if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: fmt.Sprintf("s%03d", i), Tools: []string{"read_file"}}); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 0; attempt < 10; attempt++ {
		if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: "s100", Tools: []string{"read_file"}}); err != nil {
				t.Fatal(err)
			}
		}
		frames, commits := walFrames(t, path+"-wal")
		if commits == n {
			return float64(frames) / float64(n)
		}
	}
	t.Fatal("a checkpoint restarted the WAL during every attempt")
	return 0
}

// TestAuditPagesPerUse: an audited Use writes the session's row (which
// holds its chain's head), its event and the event's entry in the time
// index, with the page splits of those two trees: no head row of its own
// and nothing of the agent's. Without the audit it writes the row alone.
// Measured (deterministic): 4.43 pages audited, 1.00 without; with the
// per-agent chains and their head rows before migration 13, 5.14.
func TestAuditPagesPerUse(t *testing.T) {
	n := 100
	if raceDetector {
		n = 30
	}
	audited := pagesPerUse(t, n)
	bare := pagesPerUse(t, n, sqlstore.WithoutAudit())
	t.Logf("pages written per governed Use: %.2f audited, %.2f without the audit trail", audited, bare)
	if bare > 1.05 {
		t.Errorf("an unaudited Use writes %.2f pages, want 1 (the session's row)", bare)
	}
	if audited > 4.5 {
		t.Errorf("an audited Use writes %.2f pages, want at most 4.5 (row, event, time index and their splits; 5.14 with a head row)", audited)
	}
}
