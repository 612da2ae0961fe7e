package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Encryption of conversations: messages (with compaction records and the
// rows lineage retires), under a data key per conversation.

// convEncTests are RunEncryption's conversation tests.
var convEncTests = []struct {
	name string
	fn   func(t *testing.T, h Harness)
}{
	{"ConversationSealedRoundTrip", testConvEncRoundTrip},
	{"ConversationWithoutKeyRefusesAndChangesNothing", testConvEncNoKey},
	{"ConversationWrongKeyIsAnErrorNeverADeletion", testConvEncWrongKey},
	{"ConversationDeleteShredsTheKey", testConvEncDeleteShreds},
	{"ConversationForkReadsParentRowsWithParentKey", testConvEncFork},
	{"ConversationRewindKeepsRetiredRowsReadable", testConvEncRewind},
	{"ConversationMovedRowDoesNotOpen", testConvEncMoved},
	{"ConversationPlaintextAndSealedMix", testConvEncMixed},
	{"ConversationRecordsSealed", testConvEncRecords},
	{"ConversationMissingKeyFileAndRotation", testConvEncKeyFiles},
	{"ConversationTrimPastDeletedParentShredsItsKey", testConvEncTrimShreds},
	{"RuntimeRemoveShredsItsConversationKey", testConvEncRuntimeRemove},
	{"ConversationSearchOptIn", testConvEncSearchOptIn},     // conv_encryption_search.go
	{"ConversationSessionDataSealed", testConvEncRowSealed}, // conv_encryption_row.go
}

// convText is the text of message i of a conversation filled by fillConv.
func convText(id string, i int) string { return fmt.Sprintf("%s %s message %d", encMarker, id, i) }

// fillConv saves conversation id with n messages holding the marker.
func (e *encEnv) fillConv(st store.Store, id string, n int) {
	e.t.Helper()
	c := store.NewConversation(id)
	for i := range n {
		c.Messages = append(c.Messages, store.UserMessage(convText(id, i)))
	}
	if _, err := st.Conversations().Save(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
}

// wantTexts checks that msgs are the messages of conversation src at
// positions from on.
func wantTexts(t *testing.T, what string, msgs []store.Message, texts ...string) {
	t.Helper()
	if len(msgs) != len(texts) {
		t.Fatalf("%s: %d messages, want %d", what, len(msgs), len(texts))
	}
	for i, m := range msgs {
		if m.Text() != texts[i] {
			t.Fatalf("%s: message %d is %q, want %q", what, i, m.Text(), texts[i])
		}
	}
}

func (e *encEnv) keyCount() int {
	e.t.Helper()
	ids, err := e.ring.IDs()
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ids)
}

func branches(t *testing.T, st store.Store) store.ConversationBranches {
	t.Helper()
	b, ok := st.Conversations().(store.ConversationBranches)
	if !ok {
		t.Fatal("conversations do not branch")
	}
	return b
}

func testConvEncRoundTrip(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	cs := st.Conversations()
	e.fillConv(st, "c1", 3)
	if n := e.keyCount(); n != 1 {
		t.Fatalf("keyring holds %d keys, want the conversation's one", n)
	}
	if _, err := cs.AppendMessages(e.ctx, "c1", store.AssistantMessage(convText("c1", 3))); err != nil {
		t.Fatal(err)
	}
	res, err := branches(t, st).Compact(e.ctx, store.ConversationCompactRequest{ID: "c1",
		Range: store.CompactionRange{From: 0, To: 2}, Summary: store.AssistantMessage(encMarker + " summary")})
	if err != nil || res.FirstSeq != 4 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	all := []string{convText("c1", 0), convText("c1", 1), convText("c1", 2), convText("c1", 3), encMarker + " summary"}
	got, err := cs.Load(e.ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "load", got.Messages, all...)
	if c := got.Messages[4].Compaction; c == nil || c.From != 0 || c.To != 2 {
		t.Fatalf("compaction record %+v", c)
	}
	msgs, err := cs.Messages(e.ctx, "c1", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "messages", msgs, all[1:3]...)
	last, err := cs.LastMessages(e.ctx, "c1", 2)
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "last", last, all[3:]...)
	tail, err := branches(t, st).SummaryTail(e.ctx, "c1", 10)
	if err != nil || tail.Summary == nil || tail.Summary.Text() != encMarker+" summary" {
		t.Fatalf("summary tail: %+v, %v", tail, err)
	}
	popped, err := cs.PopMessage(e.ctx, "c1")
	if err != nil || popped.Text() != all[4] {
		t.Fatalf("pop: %+v, %v", popped, err)
	}
	// Saving again keeps the conversation's key.
	got.Messages = got.Messages[:2]
	got.Version = 0
	if _, err := cs.Save(e.ctx, got); err != nil {
		t.Fatal(err)
	}
	if n := e.keyCount(); n != 1 {
		t.Fatalf("after a second save the keyring holds %d keys", n)
	}
	again, err := cs.Load(e.ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "load after save", again.Messages, all[:2]...)
	if s, ok := st.(store.Searcher); ok {
		hits, err := s.Search(e.ctx, store.SearchQuery{Query: encMarker})
		if err != nil || len(hits.Hits) != 0 {
			t.Fatalf("search found %d hits of an encrypted conversation (%v)", len(hits.Hits), err)
		}
		// The index check does not count sealed messages as missing.
		rep, err := s.CheckSearchIndex(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rep.Kinds {
			if k.Missing != 0 || k.Orphans != 0 {
				t.Fatalf("search index check of an encrypted store: %+v", rep)
			}
		}
	}
}

func testConvEncNoKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	e.fillConv(e.open(e.ring), "c1", 2)
	cs := e.open(nil).Conversations()
	before, err := cs.Info(e.ctx, "c1") // metadata stays plaintext
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Load(e.ctx, "c1"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("load without key: %v, want ErrKeyUnavailable", err)
	}
	if _, err := cs.Messages(e.ctx, "c1", 0, 10); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("messages without key: %v", err)
	}
	if _, err := cs.AppendMessages(e.ctx, "c1", store.UserMessage("plain")); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("append without key: %v, want ErrKeyUnavailable", err)
	} else if err.Error() != store.ErrKeyUnavailable.Error() {
		t.Fatalf("error text %q is not the kind's", err.Error())
	}
	c := store.NewConversation("c1")
	c.Messages = []store.Message{store.UserMessage("plain")}
	if _, err := cs.Save(e.ctx, c); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("save over an encrypted conversation without key: %v", err)
	}
	if _, err := cs.PopMessage(e.ctx, "c1"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("pop without key: %v", err)
	}
	b, _ := cs.(store.ConversationBranches)
	if b != nil {
		if _, err := b.Fork(e.ctx, store.ConversationForkRequest{ID: "c1", At: 0, NewID: "f"}); !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("fork without key: %v", err)
		}
	}
	after, err := cs.Info(e.ctx, "c1")
	if err != nil || after.Version != before.Version || after.MessageCount != 2 {
		t.Fatalf("after refusals: %+v (before %+v), %v", after, before, err)
	}
	if ok, _ := cs.Exists(e.ctx, "f"); ok {
		t.Fatal("a refused fork was created")
	}
	got, err := e.open(e.ring).Conversations().Load(e.ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "keyed load after refusals", got.Messages, convText("c1", 0), convText("c1", 1))
}

func testConvEncWrongKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	e.fillConv(e.open(e.ring), "c1", 2)
	wrong := openRing(t, e.dir, kekText(t, "v1"))
	cs := e.open(wrong).Conversations()
	for range 2 {
		if _, err := cs.Load(e.ctx, "c1"); !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("wrong key: %v, want ErrKeyMismatch", err)
		}
	}
	if _, err := cs.AppendMessages(e.ctx, "c1", store.UserMessage("x")); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("append with the wrong key: %v, want ErrKeyMismatch", err)
	}
	if n := e.keyCount(); n != 1 {
		t.Fatalf("keyring after wrong-key reads holds %d keys", n)
	}
	got, err := e.open(openRing(t, e.dir, e.kek)).Conversations().Load(e.ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "right key after wrong", got.Messages, convText("c1", 0), convText("c1", 1))
}

func testConvEncDeleteShreds(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fillConv(st, "a", 1)
	e.fillConv(st, "b", 1)
	ids, _ := e.ring.IDs()
	if len(ids) != 2 {
		t.Fatalf("keys %v", ids)
	}
	if err := st.Conversations().Delete(e.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	left, _ := e.ring.IDs()
	if len(left) != 1 {
		t.Fatalf("after delete the keyring holds %v, want one key", left)
	}
	if _, err := st.Conversations().Load(e.ctx, "b"); err != nil {
		t.Fatalf("the other conversation: %v", err)
	}
	// Retention deletes shred too (after ShredPending).
	e.clock.Advance(48 * 3600e9)
	if n, err := st.Conversations().DeleteUpdatedBefore(e.ctx, e.clock.Now(), 0); err != nil || n != 1 {
		t.Fatalf("delete updated before: %d, %v", n, err)
	}
	if sh, ok := st.(interface {
		ShredPending(ctx context.Context) (int, error)
	}); ok {
		if _, err := sh.ShredPending(e.ctx); err != nil {
			t.Fatal(err)
		}
		if n := e.keyCount(); n != 0 {
			t.Fatalf("after the last delete and ShredPending the keyring holds %d keys", n)
		}
	}
}

func testConvEncFork(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	cs, br := st.Conversations(), branches(t, st)
	e.fillConv(st, "p", 4)
	if _, err := br.Fork(e.ctx, store.ConversationForkRequest{ID: "p", At: 2, NewID: "f"}); err != nil {
		t.Fatal(err)
	}
	if n := e.keyCount(); n != 2 {
		t.Fatalf("a fork has a data key of its own: %d keys", n)
	}
	if _, err := cs.AppendMessages(e.ctx, "f", store.AssistantMessage(encMarker+" fork's own")); err != nil {
		t.Fatal(err)
	}
	want := []string{convText("p", 0), convText("p", 1), convText("p", 2), encMarker + " fork's own"}
	got, err := cs.Load(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork", got.Messages, want...)
	// The parent goes: its rows the fork reads move to a retired
	// history that keeps the parent's key.
	if err := cs.Delete(e.ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := e.keyCount(); n != 2 {
		t.Fatalf("the parent's key went while the fork reads its rows: %d keys", n)
	}
	// A fresh store (no cached sealer) reads the retired rows too.
	fresh := e.open(openRing(t, e.dir, e.kek)).Conversations()
	got, err = fresh.Load(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork after the parent's delete", got.Messages, want...)
	last, err := fresh.LastMessages(e.ctx, "f", 2)
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork's last after the parent's delete", last, want[2:]...)
	// A fork of the fork: three keys, three segments.
	if _, err := br.Fork(e.ctx, store.ConversationForkRequest{ID: "f", At: 3, NewID: "g"}); err != nil {
		t.Fatal(err)
	}
	got, err = cs.Load(e.ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork of the fork", got.Messages, want...)
	for _, id := range []string{"f", "g"} {
		if err := cs.Delete(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.keyCount(); n != 0 {
		t.Fatalf("after the last reader went the keyring holds %d keys", n)
	}
}

func testConvEncRewind(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	cs, br := st.Conversations(), branches(t, st)
	e.fillConv(st, "c", 4)
	if _, err := br.Fork(e.ctx, store.ConversationForkRequest{ID: "c", At: 3, NewID: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Rewind(e.ctx, store.ConversationRewindRequest{ID: "c", To: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppendMessages(e.ctx, "c", store.UserMessage(encMarker+" after rewind")); err != nil {
		t.Fatal(err)
	}
	got, err := cs.Load(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "rewound", got.Messages, convText("c", 0), convText("c", 1), encMarker+" after rewind")
	sup, err := br.Superseded(e.ctx, "c")
	if err != nil || len(sup) != 1 {
		t.Fatalf("superseded: %+v, %v", sup, err)
	}
	wantTexts(t, "superseded", sup[0].Messages, convText("c", 2), convText("c", 3))
	f, err := cs.Load(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork after its parent's rewind", f.Messages, convText("c", 0), convText("c", 1), convText("c", 2), convText("c", 3))
	if err := cs.Delete(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	f, err = e.open(openRing(t, e.dir, e.kek)).Conversations().Load(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "fork after its rewound parent's delete", f.Messages, convText("c", 0), convText("c", 1), convText("c", 2), convText("c", 3))
	if n := e.keyCount(); n != 2 {
		t.Fatalf("keys while the fork reads the deleted parent's rows: %d, want 2", n)
	}
	if err := cs.Delete(e.ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if n := e.keyCount(); n != 0 {
		t.Fatalf("after both went the keyring holds %d keys", n)
	}
}

// testConvEncMoved moves sealed content behind the store's back: to
// another position, into another conversation, plaintext into an
// encrypted conversation and ciphertext into a plaintext one. None of
// them reads; nothing is deleted.
func testConvEncMoved(t *testing.T, h Harness) {
	if h.Exec == nil {
		t.Skip("the harness cannot run SQL behind the store's back")
	}
	e := newEncEnv(t, h)
	e.fillConv(e.open(nil), "p", 2)
	st := e.open(e.ring)
	for _, id := range []string{"a1", "a2", "b"} {
		e.fillConv(st, id, 2)
	}
	cases := []struct{ name, query, read string }{
		{"OtherPosition", `UPDATE conversation_messages SET content = (SELECT content FROM conversation_messages WHERE session_id = 'a1' AND seq = 1) WHERE session_id = 'a1' AND seq = 0`, "a1"},
		{"OtherConversation", `UPDATE conversation_messages SET content = (SELECT content FROM conversation_messages WHERE session_id = 'a2' AND seq = 0) WHERE session_id = 'b' AND seq = 0`, "b"},
		{"CiphertextInPlaintext", `UPDATE conversation_messages SET content = (SELECT content FROM conversation_messages WHERE session_id = 'a2' AND seq = 0) WHERE session_id = 'p' AND seq = 0`, "p"},
		{"PlaintextInEncrypted", `UPDATE conversation_messages SET content = '[{"type":"text","text":"plain"}]' WHERE session_id = 'a2' AND seq = 1`, "a2"},
	}
	for _, tc := range cases {
		if err := h.Exec(e.ctx, e.loc, tc.query); err != nil {
			t.Fatal(err)
		}
		_, err := st.Conversations().Load(e.ctx, tc.read)
		if !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("%s: load of %s: %v, want ErrKeyMismatch", tc.name, tc.read, err)
		}
		info, err := st.Conversations().Info(e.ctx, tc.read)
		if err != nil || info.MessageCount != 2 {
			t.Fatalf("%s: after the refused read: %+v, %v", tc.name, info, err)
		}
	}
}

func testConvEncMixed(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	e.fillConv(e.open(nil), "plain", 2)
	st := e.open(e.ring)
	e.fillConv(st, "sealed", 2)
	cs := st.Conversations()
	// A plaintext conversation stays plaintext: appends of a keyed store
	// too, so the keyless store keeps reading it.
	if _, err := cs.AppendMessages(e.ctx, "plain", store.UserMessage("more")); err != nil {
		t.Fatal(err)
	}
	got, err := e.open(nil).Conversations().Load(e.ctx, "plain")
	if err != nil || len(got.Messages) != 3 {
		t.Fatalf("keyless read of a plaintext conversation: %+v, %v", got.Messages, err)
	}
	// A keyed store's fork of it is encrypted, and reads its parent's
	// plaintext rows.
	if _, err := branches(t, st).Fork(e.ctx, store.ConversationForkRequest{ID: "plain", At: 1, NewID: "fork"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppendMessages(e.ctx, "fork", store.UserMessage(encMarker+" sealed tail")); err != nil {
		t.Fatal(err)
	}
	f, err := cs.Load(e.ctx, "fork")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "encrypted fork of a plaintext parent", f.Messages, convText("plain", 0), convText("plain", 1), encMarker+" sealed tail")
	if _, err := e.open(nil).Conversations().Load(e.ctx, "fork"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("keyless read of the encrypted fork: %v", err)
	}
	if n := e.keyCount(); n != 2 {
		t.Fatalf("keys: %d, want the sealed conversation's and the fork's", n)
	}
}

// markedRecords are a conversation's records with the marker in each
// sealed column (artifact content, trace details, run prompt and event,
// report check description).
func markedRecords() (store.Artifact, store.TraceEvent, store.RunRecord, store.VerificationReport) {
	a := store.Artifact{URI: "a3s://tool-output/enc/a", ID: "tool-output:enc:a", ToolName: "enc",
		Content: encMarker + " artifact", OriginalBytes: 30, ShownBytes: 30}
	tr := store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: "read",
		Success: true, Details: json.RawMessage(`{"note":"` + encMarker + ` trace"}`)}
	run := store.RunRecord{Snapshot: store.RunSnapshot{ID: "run-1", Status: store.RunCreated, Prompt: encMarker + " run prompt"},
		Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"type":"start","note":"` + encMarker + ` run event"}`)}}}
	rep := store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "program:enc", Status: store.VerificationPassed,
		Checks: []store.VerificationCheck{{ID: "check:enc", Kind: "test", Description: encMarker + " report",
			Status: store.VerificationPassed, Required: true}}}
	return a, tr, run, rep
}

// fillRecords writes markedRecords to conversation id.
func (e *encEnv) fillRecords(st store.Store, id string) {
	e.t.Helper()
	cs := st.Conversations()
	a, tr, run, rep := markedRecords()
	if err := cs.PutArtifacts(e.ctx, id, a); err != nil {
		e.t.Fatal(err)
	}
	if _, err := cs.AppendTraces(e.ctx, id, tr, tr); err != nil {
		e.t.Fatal(err)
	}
	if err := cs.PutRuns(e.ctx, id, run); err != nil {
		e.t.Fatal(err)
	}
	if _, err := cs.AppendRunEvents(e.ctx, id, "run-1", store.RunEvent{Event: json.RawMessage(`{"note":"` + encMarker + ` appended"}`)}); err != nil {
		e.t.Fatal(err)
	}
	if err := cs.AppendReports(e.ctx, id, rep); err != nil {
		e.t.Fatal(err)
	}
}

func testConvEncRecords(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fillConv(st, "c", 1)
	e.fillRecords(st, "c")
	cs := st.Conversations()
	a, err := cs.Artifact(e.ctx, "c", "a3s://tool-output/enc/a")
	if err != nil || a.Content != encMarker+" artifact" {
		t.Fatalf("artifact: %+v, %v", a, err)
	}
	all, err := cs.Artifacts(e.ctx, "c")
	if err != nil || len(all) != 1 || all[0].Content != encMarker+" artifact" {
		t.Fatalf("artifacts: %+v, %v", all, err)
	}
	trs, err := cs.Traces(e.ctx, "c", 0, 0)
	if err != nil || len(trs) != 2 || string(trs[1].Details) != `{"note":"`+encMarker+` trace"}` {
		t.Fatalf("traces: %+v, %v", trs, err)
	}
	run, err := cs.Run(e.ctx, "c", "run-1")
	if err != nil || run.Snapshot.Prompt != encMarker+" run prompt" || len(run.Events) != 2 ||
		string(run.Events[1].Event) != `{"note":"`+encMarker+` appended"}` {
		t.Fatalf("run: %+v, %v", run, err)
	}
	runs, err := cs.Runs(e.ctx, "c")
	if err != nil || len(runs) != 1 || len(runs[0].Events) != 2 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	reps, err := cs.Reports(e.ctx, "c")
	if err != nil || len(reps) != 1 || reps[0].Checks[0].Description != encMarker+" report" {
		t.Fatalf("reports: %+v, %v", reps, err)
	}
	// The change feed opens them too (its first batch of each stream).
	fctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	for b, err := range st.Feed().Traces(fctx, store.TraceFeed{ID: "c"}) {
		if err != nil || len(b.Items) != 2 || string(b.Items[0].Details) != `{"note":"`+encMarker+` trace"}` {
			t.Fatalf("trace feed: %+v, %v", b.Items, err)
		}
		break
	}
	for b, err := range st.Feed().RunEvents(fctx, store.RunEventFeed{ID: "c", RunID: "run-1"}) {
		if err != nil || len(b.Items) != 2 || string(b.Items[1].Event) != `{"note":"`+encMarker+` appended"}` {
			t.Fatalf("run event feed: %+v, %v", b.Items, err)
		}
		break
	}
	for b, err := range e.open(nil).Feed().Traces(fctx, store.TraceFeed{ID: "c"}) {
		if !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("trace feed without key: %+v, %v", b.Items, err)
		}
		break
	}
	// Replacing writes seal too.
	_, tr, _, rep := markedRecords()
	if err := cs.SaveTraces(e.ctx, "c", []store.TraceEvent{tr}); err != nil {
		t.Fatal(err)
	}
	if err := cs.SaveReports(e.ctx, "c", []store.VerificationReport{rep, rep}); err != nil {
		t.Fatal(err)
	}
	if trs, err := cs.Traces(e.ctx, "c", 0, 0); err != nil || len(trs) != 1 {
		t.Fatalf("traces after save: %+v, %v", trs, err)
	}
	if reps, err := cs.Reports(e.ctx, "c"); err != nil || len(reps) != 2 {
		t.Fatalf("reports after save: %+v, %v", reps, err)
	}
	if s, ok := st.(store.Searcher); ok {
		hits, err := s.Search(e.ctx, store.SearchQuery{Query: encMarker})
		if err != nil || len(hits.Hits) != 0 {
			t.Fatalf("search found %d hits of an encrypted conversation's records (%v)", len(hits.Hits), err)
		}
	}

	// Without the keyring: every read and write of them is refused, and
	// nothing changes.
	plain := e.open(nil).Conversations()
	before, err := plain.Info(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	noKey := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("%s without key: %v, want ErrKeyUnavailable", what, err)
		}
	}
	_, err = plain.Artifact(e.ctx, "c", "a3s://tool-output/enc/a")
	noKey("artifact", err)
	_, err = plain.Artifacts(e.ctx, "c")
	noKey("artifacts", err)
	_, err = plain.Traces(e.ctx, "c", 0, 0)
	noKey("traces", err)
	_, err = plain.Run(e.ctx, "c", "run-1")
	noKey("run", err)
	_, err = plain.Runs(e.ctx, "c")
	noKey("runs", err)
	_, err = plain.Reports(e.ctx, "c")
	noKey("reports", err)
	a2, tr2, run2, rep2 := markedRecords()
	a2.URI = "a3s://tool-output/enc/b"
	noKey("put artifacts", plain.PutArtifacts(e.ctx, "c", a2))
	_, err = plain.AppendTraces(e.ctx, "c", tr2)
	noKey("append traces", err)
	noKey("save traces", plain.SaveTraces(e.ctx, "c", nil))
	run2.Snapshot.ID = "run-2"
	noKey("put runs", plain.PutRuns(e.ctx, "c", run2))
	_, err = plain.AppendRunEvents(e.ctx, "c", "run-1", store.RunEvent{Event: json.RawMessage(`{}`)})
	noKey("append run events", err)
	noKey("append reports", plain.AppendReports(e.ctx, "c", rep2))
	noKey("save reports", plain.SaveReports(e.ctx, "c", nil))
	after, err := plain.Info(e.ctx, "c")
	if err != nil || after.Version != before.Version {
		t.Fatalf("refused writes changed the conversation: %+v (before %+v), %v", after, before, err)
	}
	if trs, err := cs.Traces(e.ctx, "c", 0, 0); err != nil || len(trs) != 1 {
		t.Fatalf("traces after refusals: %+v, %v", trs, err)
	}
	if arts, err := cs.Artifacts(e.ctx, "c"); err != nil || len(arts) != 1 {
		t.Fatalf("artifacts after refusals: %+v, %v", arts, err)
	}
	// A record moved into another conversation does not open.
	if h.Exec != nil {
		e.fillConv(st, "d", 1)
		e.fillRecords(st, "d")
		if err := h.Exec(e.ctx, e.loc, `UPDATE conversation_artifacts SET content = (SELECT content FROM conversation_artifacts WHERE session_id = 'c') WHERE session_id = 'd'`); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Artifacts(e.ctx, "d"); !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("moved artifact: %v, want ErrKeyMismatch", err)
		}
	}
}

// testConvEncKeyFiles rotates the KEK (the conversations read with the
// new version only, not with the old one) and then removes a key file
// behind the store's back: that conversation is ErrKeyShredded, its rows
// stay, the other conversation reads.
func testConvEncKeyFiles(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fillConv(st, "a", 2)
	e.fillConv(st, "b", 2)
	e.fillRecords(st, "a")
	v2 := kekText(t, "v2")
	res, err := openRing(t, e.dir, e.kek+"\n"+v2).Rotate(e.ctx)
	if err != nil || res.Rewrapped != 2 {
		t.Fatalf("rotate: %+v, %v", res, err)
	}
	rotated := e.open(openRing(t, e.dir, v2)).Conversations()
	for _, id := range []string{"a", "b"} {
		got, err := rotated.Load(e.ctx, id)
		if err != nil {
			t.Fatalf("after rotation with v2 only, %s: %v", id, err)
		}
		wantTexts(t, "after rotation", got.Messages, convText(id, 0), convText(id, 1))
	}
	if arts, err := rotated.Artifacts(e.ctx, "a"); err != nil || len(arts) != 1 {
		t.Fatalf("artifacts after rotation: %+v, %v", arts, err)
	}
	if _, err := e.open(openRing(t, e.dir, e.kek)).Conversations().Load(e.ctx, "a"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("old KEK only: %v, want ErrKeyUnavailable", err)
	}
	info, err := rotated.Info(e.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// The key file of "a" goes behind the store's back.
	la, err := e.open(e.ring).Conversations().Load(e.ctx, "a")
	if err != nil || la.DataKeyID == "" {
		t.Fatalf("load reports no data key: %q, %v", la.DataKeyID, err)
	}
	if err := os.Remove(filepath.Join(e.dir, la.DataKeyID)); err != nil {
		t.Fatal(err)
	}
	fresh := e.open(openRing(t, e.dir, v2)).Conversations()
	if _, err := fresh.Load(e.ctx, "a"); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("missing key file: %v, want ErrKeyShredded", err)
	}
	if _, err := fresh.Traces(e.ctx, "a", 0, 0); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("traces with a missing key file: %v, want ErrKeyShredded", err)
	}
	if got, err := fresh.Info(e.ctx, "a"); err != nil || got.MessageCount != info.MessageCount {
		t.Fatalf("the rows stay: %+v, %v", got, err)
	}
	if _, err := fresh.Load(e.ctx, "b"); err != nil {
		t.Fatalf("the other conversation: %v", err)
	}
}

// testConvEncTrimShreds deletes a parent its fork reads, then trims the
// fork past its fork point: the retired rows go, and so does their key.
func testConvEncTrimShreds(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	cs := st.Conversations()
	e.fillConv(st, "p", 3)
	if _, err := branches(t, st).Fork(e.ctx, store.ConversationForkRequest{ID: "p", At: 1, NewID: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppendMessages(e.ctx, "f", store.UserMessage("own 1"), store.UserMessage("own 2")); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(e.ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := e.keyCount(); n != 2 {
		t.Fatalf("keys while the fork reads the deleted parent: %d, want 2", n)
	}
	if n, err := cs.TrimMessages(e.ctx, "f", 2); err != nil || n != 2 {
		t.Fatalf("trim: %d, %v", n, err)
	}
	if n := e.keyCount(); n != 1 {
		t.Fatalf("after the fork stopped reading its deleted parent the keyring holds %d keys, want 1", n)
	}
	got, err := cs.Load(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wantTexts(t, "trimmed fork", got.Messages, "own 1", "own 2")
}

// testConvEncRuntimeRemove removes a runtime session whose conversation
// (same id) is encrypted: the conversation goes with it, and its key.
func testConvEncRuntimeRemove(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	if _, err := st.Runtime().Insert(e.ctx, rtNew("r1")); err != nil {
		t.Fatal(err)
	}
	e.fillConv(st, "r1", 2)
	if hist, err := st.Runtime().HistorySlice(e.ctx, "r1", 0, 10); err != nil || len(hist) != 2 || hist[1].Text() != convText("r1", 1) {
		t.Fatalf("runtime history of an encrypted conversation: %+v, %v", hist, err)
	}
	if n := e.keyCount(); n != 2 {
		t.Fatalf("keys: %d, want the runtime session's and the conversation's", n)
	}
	if ok, err := st.Runtime().Remove(e.ctx, "r1"); err != nil || !ok {
		t.Fatalf("remove: %v, %v", ok, err)
	}
	if n := e.keyCount(); n != 0 {
		t.Fatalf("after the runtime session's removal the keyring holds %d keys", n)
	}
}
