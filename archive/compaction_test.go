package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestCompactionRecordsRoundTrip: export and import keep a compaction
// record a compaction record (with its range) and event timestamps to the
// nanosecond; a version-3 document may not carry a range.
func TestCompactionRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	as := src.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for i := range 3 {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{Timestamp: at.Add(time.Duration(i)), Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 2},
		Summary: store.AgentEvent{ID: "sum", Data: json.RawMessage(`"s"`)}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := archive.Export(ctx, src, &buf, archive.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	dst, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "dst.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := archive.Import(ctx, dst, bytes.NewReader(buf.Bytes()), archive.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := dst.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || got.Events[0].ID != "sum" || got.Events[0].Compaction == nil ||
		*got.Events[0].Compaction != (store.CompactionRange{From: 1, To: 2}) || !got.Events[1].Timestamp.Equal(at.Add(2)) {
		t.Fatalf("imported summary read %+v", got.Events)
	}
	old := bytes.Replace(buf.Bytes(), []byte(`"version": 4`), []byte(`"version": 3`), 1)
	if bytes.Equal(old, buf.Bytes()) {
		t.Fatal("no version field to rewrite")
	}
	other, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = archive.Import(ctx, other, bytes.NewReader(old), archive.ImportOptions{})
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("a version-3 document with a compaction range: %v", err)
	}
}
