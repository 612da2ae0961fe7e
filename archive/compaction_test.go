package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestCompactionRecordsRoundTrip: export and import keep a compaction
// record a compaction record (with its range) and event timestamps to the
// nanosecond; a version-3 document may not carry a range.
func TestCompactionRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "src.db"))
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
	dst, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "dst.db"))
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
	old := bytes.Replace(buf.Bytes(), []byte(`"version": `+strconv.Itoa(archive.Version)), []byte(`"version": 3`), 1)
	if bytes.Equal(old, buf.Bytes()) {
		t.Fatal("no version field to rewrite")
	}
	other, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = archive.Import(ctx, other, bytes.NewReader(old), archive.ImportOptions{})
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("a version-3 document with a compaction range: %v", err)
	}
}

// TestForksRoundTrip: a fork exported after its parent imports as a fork
// of it (its inherited events are not stored twice: History shows the
// lineage), with the same events and state; so does a fork that names a
// session the document lists after it (it waits for its parent).
func TestForksRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	as := src.AgentSessions()
	key := store.SessionKey{App: "a", User: "u", Session: "m-parent"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: json.RawMessage(`{}`)},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprint(i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"z-after", "a-before"} {
		if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 3, Session: name}); err != nil {
			t.Fatal(err)
		}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: store.SessionKey{App: "a", User: "u", Session: name},
			Event: store.AgentEvent{ID: "own", Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := archive.Export(ctx, src, &buf, archive.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"forked_from": {`)) {
		t.Fatal("the export names no fork point")
	}
	dst, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "dst.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := archive.Import(ctx, dst, bytes.NewReader(buf.Bytes()), archive.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m-parent", "z-after", "a-before"} {
		k := store.SessionKey{App: "a", User: "u", Session: name}
		want, err := src.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != len(want.Events) || got.Version != want.Version || string(got.State.Session["n"]) != string(want.State.Session["n"]) {
			t.Fatalf("%s: imported %d events (version %d, state %s), exported %d (version %d, state %s)", name,
				len(got.Events), got.Version, got.State.Session["n"], len(want.Events), want.Version, want.State.Session["n"])
		}
		for i := range got.Events {
			if got.Events[i].ID != want.Events[i].ID || !got.Events[i].Timestamp.Equal(want.Events[i].Timestamp) {
				t.Fatalf("%s event %d: %+v, want %+v", name, i, got.Events[i], want.Events[i])
			}
		}
	}
	tree, err := dst.AgentSessions().History(ctx, store.SessionKey{App: "a", User: "u", Session: "z-after"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 3 || tree[0].Key.Session != "m-parent" || tree[1].Key.Session != "z-after" || tree[1].ForkSeq != 3 {
		t.Fatalf("the fork restored after its parent is not a fork of it: %+v", tree)
	}
	// The fork listed before its parent waits for it: a fork too.
	tree, err = dst.AgentSessions().History(ctx, store.SessionKey{App: "a", User: "u", Session: "a-before"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 3 || tree[2].Key.Session != "a-before" || tree[2].Parent != tree[0].ID || tree[2].ForkSeq != 3 {
		t.Fatalf("the fork listed before its parent is not a fork of it: %+v", tree)
	}
}
