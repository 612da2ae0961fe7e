package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// rtConversation saves a conversation with the runtime session's id and
// appends n messages "m0" … "m<n-1>".
func (e *env) rtConversation(id string, n int) {
	e.t.Helper()
	conv := e.st.Conversations()
	if _, err := conv.Save(e.ctx, store.NewConversation(id)); err != nil {
		e.t.Fatalf("Save conversation %q: %v", id, err)
	}
	var msgs []store.Message
	for i := range n {
		if i%2 == 0 {
			msgs = append(msgs, store.UserMessage(fmt.Sprintf("m%d", i)))
		} else {
			msgs = append(msgs, store.AssistantMessage(fmt.Sprintf("m%d", i)))
		}
	}
	if n > 0 {
		if _, err := conv.AppendMessages(e.ctx, id, msgs...); err != nil {
			e.t.Fatalf("AppendMessages(%q): %v", id, err)
		}
	}
}

func (e *env) historyLen(id string) int64 {
	e.t.Helper()
	n, err := e.rt().HistoryLen(e.ctx, id)
	if err != nil {
		e.t.Fatalf("HistoryLen(%q): %v", id, err)
	}
	return n
}

// historyTexts returns the texts of HistorySlice(id, from, limit).
func (e *env) historyTexts(id string, from int64, limit int) string {
	e.t.Helper()
	msgs, err := e.rt().HistorySlice(e.ctx, id, from, limit)
	if err != nil {
		e.t.Fatalf("HistorySlice(%q, %d): %v", id, from, err)
	}
	if msgs == nil {
		e.t.Fatalf("HistorySlice(%q, %d) returned nil, want a slice", id, from)
	}
	out := make([]string, len(msgs))
	for i := range msgs {
		if want := fmt.Sprintf("m%d", msgs[i].Seq); msgs[i].Text() != want {
			e.t.Fatalf("message at %d reads %q, want %q", msgs[i].Seq, msgs[i].Text(), want)
		}
		out[i] = msgs[i].Text()
	}
	return fmt.Sprint(out)
}

func testRTHistory(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	// No conversation yet: an empty history.
	if n := e.historyLen("s"); n != 0 {
		t.Fatalf("history length without conversation = %d", n)
	}
	if got := e.historyTexts("s", 0, 0); got != "[]" {
		t.Fatalf("slice without conversation = %s", got)
	}
	e.rtConversation("s", 5)
	if n := e.historyLen("s"); n != 5 {
		t.Fatalf("history length = %d, want 5", n)
	}
	for _, c := range []struct {
		from  int64
		limit int
		want  string
	}{
		{0, 0, "[m0 m1 m2 m3 m4]"},
		{2, 0, "[m2 m3 m4]"},
		{2, 2, "[m2 m3]"},
		{4, 0, "[m4]"},
		{5, 0, "[]"},   // at the end
		{500, 0, "[]"}, // saturates past the end
	} {
		if got := e.historyTexts("s", c.from, c.limit); got != c.want {
			t.Fatalf("slice from %d (limit %d) = %s, want %s", c.from, c.limit, got, c.want)
		}
	}
	// A poller reads what was appended since its last length.
	last := e.historyLen("s")
	if _, err := e.st.Conversations().AppendMessages(e.ctx, "s", store.AssistantMessage("m5")); err != nil {
		t.Fatal(err)
	}
	if got := e.historyTexts("s", last, 0); got != "[m5]" {
		t.Fatalf("new messages = %s", got)
	}
	// Trimming the oldest keeps positions: the length stays the end, a
	// slice from a trimmed index gets what is left.
	if _, err := e.st.Conversations().TrimMessages(e.ctx, "s", 2); err != nil {
		t.Fatal(err)
	}
	if n := e.historyLen("s"); n != 6 {
		t.Fatalf("length after trim = %d, want 6", n)
	}
	if got := e.historyTexts("s", 0, 0); got != "[m4 m5]" {
		t.Fatalf("slice after trim = %s", got)
	}
	if got := e.historyTexts("s", 6, 0); got != "[]" {
		t.Fatalf("slice at end after trim = %s", got)
	}
}

func testRTHistoryNeedsRuntimeSession(t *testing.T, e *env) {
	// A conversation alone is not a runtime session.
	e.rtConversation("conv-only", 3)
	_, err := e.rt().HistoryLen(e.ctx, "conv-only")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.rt().HistorySlice(e.ctx, "conv-only", 0, 0)
	wantErr(t, err, store.ErrNotFound)
	e.rtInsert(rtNew("s"))
	for name, err := range map[string]error{
		"len empty id":   func() error { _, err := e.rt().HistoryLen(e.ctx, ""); return err }(),
		"slice empty id": func() error { _, err := e.rt().HistorySlice(e.ctx, "", 0, 0); return err }(),
		"slice from -1":  func() error { _, err := e.rt().HistorySlice(e.ctx, "s", -1, 0); return err }(),
		"slice limit -1": func() error { _, err := e.rt().HistorySlice(e.ctx, "s", 0, -1); return err }(),
	} {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
}

func (e *env) convExists(id string) bool {
	e.t.Helper()
	ok, err := e.st.Conversations().Exists(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Exists(%q): %v", id, err)
	}
	return ok
}

func testRTRemoveDeletesConversation(t *testing.T, e *env) {
	for name, remove := range map[string]func(string) bool{"Remove": e.rtRemove, "Kill": e.rtKill} {
		id := "s-" + name
		e.rtInsert(rtNew(id))
		e.rtConversation(id, 3)
		e.putUpload(id, "r", []byte("x"))
		gen, tctx := e.beginTurn(id)
		if !remove(id) {
			t.Fatalf("%s returned false", name)
		}
		if e.rtExists(id) || e.convExists(id) {
			t.Fatalf("%s left the session (%v) or its conversation (%v)", name, e.rtExists(id), e.convExists(id))
		}
		if !isDone(tctx) {
			t.Fatalf("%s did not cancel the turn", name)
		}
		if _, ok := e.takeCause(id, gen); !ok {
			t.Fatalf("%s recorded no cause", name)
		}
		// A new session and conversation of the same id start empty.
		e.rtInsert(rtNew(id))
		if n := e.historyLen(id); n != 0 {
			t.Fatalf("history after %s and re-create = %d", name, n)
		}
	}
	// Removing a session without a conversation is fine; a conversation
	// of another id is untouched.
	e.rtInsert(rtNew("plain"))
	e.rtConversation("other", 1)
	if !e.rtRemove("plain") || !e.convExists("other") {
		t.Fatal("removing a session touched another conversation")
	}
}

func testRTEvictKeepsConversation(t *testing.T, e *env) {
	e.rtInsert(rtOwned("old", store.ChatModeChat, "tui"))
	e.rtConversation("old", 2)
	e.rtInsert(rtOwned("new", store.ChatModeChat, "tui"))
	if ev := e.evict("tui", store.ChatModeChat, "new"); len(ev) != 1 {
		t.Fatalf("evicted %+v", ev)
	}
	// Eviction frees the runtime session only: the conversation stays so
	// that the session can be loaded again.
	if !e.convExists("old") {
		t.Fatal("eviction deleted the conversation")
	}
	e.rtInsert(rtOwned("old", store.ChatModeChat, "tui"))
	if got := e.historyTexts("old", 0, 0); got != "[m0 m1]" {
		t.Fatalf("reloaded history = %s", got)
	}
}
