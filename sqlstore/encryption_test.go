package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// encMarker is the distinctive plaintext the byte scans look for.
const encMarker = "QUOKKA-PLAINTEXT-5521"

func testProvider(t *testing.T) store.KeyProvider {
	t.Helper()
	l, err := sskeys.GenerateEntry("v1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sskeys.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fillMarked writes an encrypted session whose every content column holds
// the marker: initial state, events, state deltas, a fork's state, a
// rewind's superseded run.
func fillMarked(t *testing.T, st *sqlstore.Store, key store.SessionKey) {
	t.Helper()
	ctx := context.Background()
	as := st.AgentSessions()
	mark := func(s string) json.RawMessage { b, _ := json.Marshal(encMarker + "-" + s); return b }
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"note": mark("initial")}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ev := store.AgentEvent{Data: json.RawMessage(`{"author":"user","content":{"parts":[{"text":"` + encMarker + ` said ` + string(rune('a'+i)) + `"}]}}`)}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev,
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"note": mark("delta")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := as.UpdateState(ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"other": mark("update")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 2, Session: key.Session + "-fork"}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Rewind(ctx, store.RewindRequest{Key: key, To: 3}); err != nil {
		t.Fatal(err)
	}
}

// fillMarkedConv writes encrypted conversations whose every sealed
// column holds the marker: messages with a compaction record, artifacts,
// trace events, a run with events, reports; a fork (prefix+"-fork"), a
// rewind's superseded run, and a deleted parent (prefix+"-p") whose rows
// its fork (prefix+"-pfork") still reads from a retired history. It
// returns the conversations left and the number of data keys made.
func fillMarkedConv(t *testing.T, st *sqlstore.Store, prefix string) (ids []string, keys int) {
	t.Helper()
	ctx := context.Background()
	cs := st.Conversations()
	b := cs.(store.ConversationBranches)
	say := func(s string) store.Message { return store.UserMessage(encMarker + " " + prefix + " " + s) }
	for _, id := range []string{prefix, prefix + "-p"} {
		c := store.NewConversation(id)
		c.Messages = []store.Message{say("m0"), say("m1"), say("m2"), say("m3")}
		markConvRow(&c)
		if _, err := cs.Save(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Compact(ctx, store.ConversationCompactRequest{ID: prefix, Range: store.CompactionRange{From: 0, To: 1}, Summary: say("summary")}); err != nil {
		t.Fatal(err)
	}
	mark := func(s string) json.RawMessage { v, _ := json.Marshal(encMarker + " " + s); return v }
	if err := cs.PutArtifacts(ctx, prefix, store.Artifact{URI: "a3s://x/" + prefix, ID: "x", ToolName: "t", Content: encMarker + " artifact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppendTraces(ctx, prefix, store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: "n",
		Details: json.RawMessage(`{"d":` + string(mark("trace")) + `}`)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.PutRuns(ctx, prefix, store.RunRecord{Snapshot: store.RunSnapshot{ID: "r", Prompt: encMarker + " prompt"},
		Events: []store.RunEvent{{Event: json.RawMessage(`{"e":` + string(mark("run event")) + `}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := cs.AppendReports(ctx, prefix, store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "s", Status: store.VerificationPassed,
		Checks: []store.VerificationCheck{{ID: "c", Kind: "test", Description: encMarker + " report", Status: store.VerificationPassed}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fork(ctx, store.ConversationForkRequest{ID: prefix, At: 2, NewID: prefix + "-fork"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppendMessages(ctx, prefix+"-fork", say("fork's own")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Rewind(ctx, store.ConversationRewindRequest{ID: prefix, To: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fork(ctx, store.ConversationForkRequest{ID: prefix + "-p", At: 3, NewID: prefix + "-pfork"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(ctx, prefix+"-p"); err != nil {
		t.Fatal(err)
	}
	return []string{prefix, prefix + "-fork", prefix + "-pfork"}, 4
}

// The marked session data of fillMarkedConv's conversations: the
// system prompt, a task and the security configuration hold the marker.
var (
	markedPrompt = encMarker + " system prompt"
	markedTask   = store.Task{ID: "t1", Content: encMarker + " task", Status: store.TaskPending, Priority: store.PriorityHigh}
)

// markConvRow gives c the marked session data.
func markConvRow(c *store.Conversation) {
	c.Config.SystemPrompt = markedPrompt
	c.Tasks = []store.Task{markedTask}
	c.Config.SecurityConfig = json.RawMessage(`{"note":"` + encMarker + ` security"}`)
}

// wantMarkedRow fails t unless c holds the marked session data.
func wantMarkedRow(t *testing.T, what string, c store.Conversation) {
	t.Helper()
	if c.Config.SystemPrompt != markedPrompt || len(c.Tasks) != 1 || !reflect.DeepEqual(c.Tasks[0], markedTask) ||
		!strings.Contains(string(c.Config.SecurityConfig), encMarker+" security") {
		t.Fatalf("%s: %s's session data: prompt %q, tasks %+v, security %s", what, c.ID,
			c.Config.SystemPrompt, c.Tasks, c.Config.SecurityConfig)
	}
}

// scanFiles fails t if any of the files holds the marker.
func scanFiles(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(encMarker)) || bytes.Contains(b, []byte(strings.ToLower(encMarker))) {
			t.Errorf("%s (%d bytes) holds plaintext of an encrypted session", filepath.Base(p), len(b))
		}
	}
}

// TestEncryptionByteScan writes encrypted sessions and scans the database
// file, its WAL (before any checkpoint), and a backup for the marker. A
// plaintext session written the same way is found by the same scan, so
// the scan can fail.
func TestEncryptionByteScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := sqlstore.FreshDBPath(t, "s.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(testProvider(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fillMarked(t, st, store.SessionKey{App: "a", User: "u", Session: "s"})
	_, convKeys := fillMarkedConv(t, st, "c")
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the scan needs a WAL with frames: %v", err)
	}
	scanFiles(t, path, path+"-wal")
	bk := filepath.Join(dir, "backup.db")
	if _, err := sqlstore.Backup(ctx, path, bk, sqlstore.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, bk)
	// The doctor holds no keys: sealed documents pass its decode check.
	if err := sqlstore.CheckIntact(ctx, bk); err != nil {
		t.Fatalf("check of the encrypted backup: %v", err)
	}
	if ids, err := os.ReadDir(sskeys.RingDir(path)); err != nil || len(ids) != 2+convKeys {
		t.Fatalf("keyring beside the database: %v, %v (want the sessions' and the conversations' keys)", ids, err)
	}

	// The control: a plaintext store's file holds the marker.
	plainPath := sqlstore.FreshDBPath(t, "plain.db")
	plain, err := sqlstore.Open(ctx, plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fillMarked(t, plain, store.SessionKey{App: "a", User: "u", Session: "s"})
	b, _ := os.ReadFile(plainPath + "-wal")
	if !bytes.Contains(b, []byte(encMarker)) {
		t.Fatal("control: the plaintext store's WAL does not hold the marker; the scan proves nothing")
	}
	// The same for conversations alone.
	convPath := sqlstore.FreshDBPath(t, "plain-conv.db")
	pc, err := sqlstore.Open(ctx, convPath)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	fillMarkedConv(t, pc, "c")
	if b, _ := os.ReadFile(convPath + "-wal"); !bytes.Contains(b, []byte(encMarker+" c m3")) || !bytes.Contains(b, []byte(encMarker+" artifact")) ||
		!bytes.Contains(b, []byte(markedPrompt)) || !bytes.Contains(b, []byte(markedTask.Content)) {
		t.Fatal("control: the plaintext conversations' WAL does not hold the marker; the scan proves nothing")
	}
}

// TestEncryptionShredOldBackup takes a backup, deletes the session (its
// key is shredded), and finds the backup unreadable for that session with
// the keyring of today, while another session of the backup still reads.
func TestEncryptionShredOldBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := sqlstore.FreshDBPath(t, "s.db")
	p := testProvider(t)
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gone := store.SessionKey{App: "a", User: "u", Session: "gone"}
	kept := store.SessionKey{App: "a", User: "u", Session: "kept"}
	fillMarked(t, st, gone)
	fillMarked(t, st, kept)
	goneConvs, _ := fillMarkedConv(t, st, "gone")
	fillMarkedConv(t, st, "kept")
	bk := filepath.Join(dir, "backup.db")
	if _, err := sqlstore.Backup(ctx, path, bk, sqlstore.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	as := st.AgentSessions()
	for _, k := range []store.SessionKey{gone, {App: gone.App, User: gone.User, Session: gone.Session + "-fork"}} {
		if err := as.DeleteSession(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range goneConvs {
		if err := st.Conversations().Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.ShredPending(ctx); err != nil || n != 0 {
		t.Fatalf("nothing left to shred after the deletes: %d, %v", n, err)
	}
	// The old backup with today's keyring: the deleted session is gone
	// for good, the other one reads.
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := sqlstore.Open(ctx, bk, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	_, err = old.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: gone, IncludeEvents: true})
	if !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("deleted session in the old backup: %v, want ErrKeyShredded", err)
	}
	got, err := old.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: kept, IncludeEvents: true})
	if err != nil || len(got.Events) != 3 || !strings.Contains(string(got.Events[0].Data), encMarker) {
		t.Fatalf("kept session in the old backup: %+v, %v", got, err)
	}
	// Conversations likewise, the retired rows a deleted fork read too.
	for _, id := range goneConvs {
		if _, err := old.Conversations().Load(ctx, id); !errors.Is(err, store.ErrKeyShredded) {
			t.Fatalf("deleted conversation %s in the old backup: %v, want ErrKeyShredded", id, err)
		}
	}
	if _, err := old.Conversations().Artifacts(ctx, "gone"); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("deleted conversation's artifacts in the old backup: %v, want ErrKeyShredded", err)
	}
	kc, err := old.Conversations().Load(ctx, "kept-pfork")
	if err != nil || len(kc.Messages) != 4 || !strings.Contains(kc.Messages[0].Text(), encMarker) {
		t.Fatalf("kept conversation in the old backup: %+v, %v", kc.Messages, err)
	}
	if keysLeft, _ := ring.IDs(); len(keysLeft) != 2+4 {
		t.Fatalf("keys left: %d, want the kept session's two and the kept conversations' four", len(keysLeft))
	}
}

// TestEncryptionExport exports an encrypted store: the document holds no
// plaintext, an export without the keyring refuses the session, an
// import needs the keyring, and once the session is deleted (its key
// shredded) the export cannot be imported any more.
func TestEncryptionExport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := sqlstore.FreshDBPath(t, "s.db")
	p := testProvider(t)
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	fillMarked(t, st, key)
	convs, _ := fillMarkedConv(t, st, "c")
	want := map[string][]string{}
	for _, id := range convs {
		c, err := st.Conversations().Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Messages {
			want[id] = append(want[id], m.Text())
		}
	}
	sameConvs := func(what string, s *sqlstore.Store, sealed bool) {
		t.Helper()
		for _, id := range convs {
			c, err := s.Conversations().Load(ctx, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", what, id, err)
			}
			if (c.DataKeyID != "") != sealed {
				t.Fatalf("%s: %s has data key %q", what, id, c.DataKeyID)
			}
			wantMarkedRow(t, what, c)
			var got []string
			for _, m := range c.Messages {
				got = append(got, m.Text())
			}
			if strings.Join(got, "|") != strings.Join(want[id], "|") {
				t.Fatalf("%s: %s messages %q, want %q", what, id, got, want[id])
			}
		}
		a, err := s.Conversations().Artifacts(ctx, "c")
		if err != nil || len(a) != 1 || a[0].Content != encMarker+" artifact" {
			t.Fatalf("%s: artifacts %+v, %v", what, a, err)
		}
		r, err := s.Conversations().Run(ctx, "c", "r")
		if err != nil || r.Snapshot.Prompt != encMarker+" prompt" || len(r.Events) != 1 {
			t.Fatalf("%s: run %+v, %v", what, r, err)
		}
	}
	var buf bytes.Buffer
	if _, err := archive.Export(ctx, st, &buf, archive.ExportOptions{}); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("export without the keyring: %v, want ErrKeyUnavailable", err)
	}
	exp := filepath.Join(dir, "export.json")
	if _, err := archive.ExportFile(ctx, st, exp, archive.ExportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, exp)
	doc, _ := os.ReadFile(exp)
	if !bytes.Contains(doc, []byte(`"data_key"`)) || !bytes.Contains(doc, []byte(sskeys.Marker)) {
		t.Fatal("the export carries no sealed session")
	}

	// Import into a fresh store: without the keyring nothing is
	// imported; with it the session reads back.
	other, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := archive.ImportFile(ctx, other, exp, archive.ImportOptions{}); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("import without the keyring: %v", err)
	}
	if _, err := other.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused import wrote the session: %v", err)
	}
	if ok, err := other.Conversations().Exists(ctx, "c"); ok || err != nil {
		t.Fatalf("a refused import wrote the conversation: %v, %v", ok, err)
	}
	if _, err := archive.ImportFile(ctx, other, exp, archive.ImportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}
	got, err := other.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(got.Events) != 3 || !strings.Contains(string(got.Events[0].Data), encMarker) {
		t.Fatalf("imported: %+v, %v", got.Events, err)
	}
	sameConvs("imported into a plaintext store", other, false)

	// Import into an encrypting store: the sessions are stored sealed
	// under data keys of their own (never in plaintext) and read back.
	encPath := sqlstore.FreshDBPath(t, "encrypted-import.db")
	encRing, err := sskeys.OpenRing(sskeys.RingDir(encPath), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sqlstore.Open(ctx, encPath, sqlstore.WithKeyRing(encRing))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if _, err := archive.ImportFile(ctx, enc, exp, archive.ImportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []store.SessionKey{key, {App: key.App, User: key.User, Session: key.Session + "-fork"}} {
		got, err := enc.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true})
		if err != nil || got.DataKeyID == "" || len(got.Events) == 0 || !strings.Contains(string(got.Events[0].Data), encMarker) ||
			!strings.Contains(string(got.State.Session["note"]), encMarker) {
			t.Fatalf("imported into an encrypting store, %s: key %q, %+v, %v", k.Session, got.DataKeyID, got.State, err)
		}
	}
	sameConvs("imported into an encrypting store", enc, true)
	scanFiles(t, encPath, encPath+"-wal")

	// Shredded: the export is unreadable for good.
	for _, k := range []store.SessionKey{key, {App: key.App, User: key.User, Session: key.Session + "-fork"}} {
		if err := st.AgentSessions().DeleteSession(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// Only the conversations left: their keys' shred makes the export
	// unreadable as well.
	exp2 := filepath.Join(dir, "export-conv.json")
	if _, err := archive.ExportFile(ctx, st, exp2, archive.ExportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, exp2)
	for _, id := range convs {
		if err := st.Conversations().Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	fourth, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "fourth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fourth.Close()
	if _, err := archive.ImportFile(ctx, fourth, exp2, archive.ImportOptions{Keys: ring}); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("import of conversations after the shred: %v, want ErrKeyShredded", err)
	}
	third, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "third.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := archive.ImportFile(ctx, third, exp, archive.ImportOptions{Keys: ring}); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("import after the shred: %v, want ErrKeyShredded", err)
	}
}
