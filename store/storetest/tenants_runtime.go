package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// trScope is one side of the runtime isolation test.
type trScope struct {
	name   string // "" for the default tenant
	marker string
	rt     store.Runtime
	c      store.Conversations
	gen    uint64          // the running turn of its main session
	turn   context.Context // that turn's context
}

// The owner every scope's sessions share: an eviction through one tenant
// must leave the others' sessions of the same owner alone.
const trOwner = "owner-shared"

func trMain(sc *trScope) string { return tcID(tcScope{name: sc.name}, "rt-main") }
func trIdle(sc *trScope) string { return tcID(tcScope{name: sc.name}, "rt-idle") }

// trSeed writes scope sc's runtime rows: a session with overrides, two
// uploads, a running turn cancelled by the client (a takeable cause) and a
// conversation history; and an idle session of the same owner and mode.
func trSeed(t *testing.T, e *env, sc *trScope) {
	t.Helper()
	m := sc.marker
	for _, id := range []string{trMain(sc), trIdle(sc)} {
		if _, err := sc.rt.Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "agent-" + m,
			WorkspaceDir: "/ws/" + m, ChatMode: store.ChatModeChat, OwnerID: trOwner}); err != nil {
			t.Fatalf("%s: insert %s: %v", m, id, err)
		}
	}
	main := trMain(sc)
	model := "model-" + m
	if _, err := sc.rt.SetOverrides(e.ctx, main, store.Overrides{Model: &model}); err != nil {
		t.Fatalf("%s: overrides: %v", m, err)
	}
	for _, ref := range []string{"ref-1", "ref-2"} {
		if _, err := sc.rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: main, RefID: ref, Marker: m,
			WorkspacePath: "up/" + ref, Content: []byte(m + " " + ref)}); err != nil {
			t.Fatalf("%s: upload: %v", m, err)
		}
	}
	conv := store.NewConversation(main)
	conv.Messages = []store.Message{store.UserMessage(m + " asks"), store.AssistantMessage(m + " answers")}
	if _, err := sc.c.Save(e.ctx, conv); err != nil {
		t.Fatalf("%s: conversation: %v", m, err)
	}
	gen, ctx, err := sc.rt.BeginTurn(e.ctx, main)
	if err != nil {
		t.Fatalf("%s: begin turn: %v", m, err)
	}
	sc.gen, sc.turn = gen, ctx
}

// trDump reads everything rt can see through every read method of the
// runtime facet, as text.
func trDump(t *testing.T, e *env, rt store.Runtime) string {
	t.Helper()
	var b strings.Builder
	put := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", what, j)
	}
	var ids []string
	for after := ""; ; {
		p, err := rt.ListIDs(e.ctx, store.ListIDsRequest{After: after, Limit: 1})
		put("ids", p, err)
		ids = append(ids, p.Items...)
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	n, err := rt.Count(e.ctx)
	put("count", n, err)
	by, err := rt.CountByAgent(e.ctx)
	put("by agent", by, err)
	for _, id := range ids {
		s, err := rt.Get(e.ctx, id)
		put("get "+id, s, err)
		hl, err := rt.HistoryLen(e.ctx, id)
		put("history len", hl, err)
		h, err := rt.HistorySlice(e.ctx, id, 0, 100)
		put("history", h, err)
		ups, err := rt.ListUploads(e.ctx, store.ListUploadsRequest{SessionID: id, Limit: 100})
		put("uploads", ups, err)
		for _, u := range ups.Items {
			got, err := rt.GetUpload(e.ctx, id, u.RefID)
			put("upload", got, err)
			_, content, err := rt.ReadUpload(e.ctx, id, u.RefID)
			put("content", string(content), err)
		}
	}
	return b.String()
}

// testTenantRuntime seeds runtime sessions in the default tenant and in
// tenants A and B, then calls every method of the runtime facet through A:
// reads find A's rows only, another tenant's id is ErrNotFound (or a
// no-op where the method reports "nothing there"), and B's and the
// default tenant's sessions, uploads and turns read exactly as before.
func testTenantRuntime(t *testing.T, e *env) {
	def := &trScope{name: "", marker: "rmark-default", rt: e.rt(), c: e.conv()}
	ta, tb := e.tenant(t, "rt-a"), e.tenant(t, "rt-b")
	a := &trScope{name: "rt-a", marker: "rmark-a", rt: ta.Runtime(), c: ta.Conversations()}
	b := &trScope{name: "rt-b", marker: "rmark-b", rt: tb.Runtime(), c: tb.Conversations()}
	scopes := []*trScope{def, a, b}
	for _, sc := range scopes {
		trSeed(t, e, sc)
	}
	// The client cancels every scope's turn: each records a takeable cause.
	for _, sc := range scopes {
		if ok, err := sc.rt.Cancel(e.ctx, trMain(sc), store.CauseClientRequest); err != nil || !ok {
			t.Fatalf("%s: cancel = %v, %v", sc.marker, ok, err)
		}
		<-sc.turn.Done()
	}
	before := map[string]string{}
	for _, sc := range scopes {
		before[sc.marker] = trDump(t, e, sc.rt)
		for _, other := range scopes {
			if other.marker != sc.marker && strings.Contains(before[sc.marker], other.marker) {
				t.Fatalf("%s reads rows of %s:\n%s", sc.marker, other.marker, before[sc.marker])
			}
		}
		if !strings.Contains(before[sc.marker], sc.marker+" ref-1") || !strings.Contains(before[sc.marker], sc.marker+" answers") {
			t.Fatalf("%s does not read its own rows:\n%s", sc.marker, before[sc.marker])
		}
	}
	onlyA := func(t *testing.T, what string, v any) {
		t.Helper()
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{def.marker, b.marker} {
			if strings.Contains(string(j), other) {
				t.Errorf("%s through rt-a returns a row of %s: %s", what, other, j)
			}
		}
	}
	rt := a.rt
	t.Run("Reads", func(t *testing.T) {
		p, err := rt.ListIDs(e.ctx, store.ListIDsRequest{Limit: 100})
		if err != nil || strings.Join(p.Items, ",") != trIdle(a)+","+trMain(a) {
			t.Fatalf("ListIDs = %v, %v; want A's two sessions", p.Items, err)
		}
		if n, err := rt.Count(e.ctx); err != nil || n != 2 {
			t.Fatalf("Count = %d, %v; want 2", n, err)
		}
		by, err := rt.CountByAgent(e.ctx)
		if err != nil || len(by) != 1 || by["agent-"+a.marker] != 2 {
			t.Fatalf("CountByAgent = %v, %v", by, err)
		}
		s, err := rt.Get(e.ctx, trMain(a))
		if err != nil || s.Overrides.Model == nil || *s.Overrides.Model != "model-"+a.marker {
			t.Fatalf("Get = %+v, %v", s, err)
		}
		onlyA(t, "Get", s)
		h, err := rt.HistorySlice(e.ctx, trMain(a), 0, 10)
		if err != nil || len(h) != 2 {
			t.Fatalf("HistorySlice = %d messages, %v", len(h), err)
		}
		onlyA(t, "HistorySlice", h)
	})
	t.Run("OtherTenantsIDsAreNotFound", func(t *testing.T) {
		for _, sc := range []*trScope{b, def} {
			trForeign(t, e, rt, sc)
		}
	})
	t.Run("HistoryOfAnotherTenantsConversationIsEmpty", func(t *testing.T) {
		// B's conversation under an id that is A's runtime session: A's
		// session has no history (runtime sessions and conversations
		// pair by id within a tenant only).
		conv := store.NewConversation("rt-paired")
		conv.Messages = []store.Message{store.UserMessage(b.marker + " paired")}
		if _, err := b.c.Save(e.ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: "rt-paired", AgentAlias: "x", WorkspaceDir: "/x", ChatMode: store.ChatModeACP}); err != nil {
			t.Fatal(err)
		}
		if n, err := rt.HistoryLen(e.ctx, "rt-paired"); err != nil || n != 0 {
			t.Errorf("HistoryLen of A's session paired with B's conversation = %d, %v; want 0", n, err)
		}
		if h, err := rt.HistorySlice(e.ctx, "rt-paired", 0, 10); err != nil || len(h) != 0 {
			t.Errorf("HistorySlice = %d messages, %v; want none", len(h), err)
		}
		if ok, err := rt.Remove(e.ctx, "rt-paired"); err != nil || !ok {
			t.Fatalf("Remove = %v, %v", ok, err)
		}
		if _, err := b.c.Info(e.ctx, "rt-paired"); err != nil {
			t.Errorf("B's conversation after A removed its runtime session of the same id: %v", err)
		}
		if err := b.c.Delete(e.ctx, "rt-paired"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("InsertOfATakenIDIsConflict", func(t *testing.T) {
		_, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: trMain(b), AgentAlias: "x", WorkspaceDir: "/x", ChatMode: store.ChatModeChat})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Insert of B's id = %v, want ErrConflict", err)
		}
	})
	t.Run("Writes", func(t *testing.T) {
		main := trMain(a)
		e.clock.Advance(time.Second)
		if err := rt.Touch(e.ctx, main); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		model := "changed-a"
		if _, err := rt.SetOverrides(e.ctx, main, store.Overrides{Model: &model}); err != nil {
			t.Fatalf("SetOverrides: %v", err)
		}
		if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: main, RefID: "ref-3", WorkspacePath: "up/3", Content: []byte("changed-a")}); err != nil {
			t.Fatalf("PutUpload: %v", err)
		}
		// The same content as B's upload: stored once, read by each.
		if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: main, RefID: "ref-4", WorkspacePath: "up/4", Content: []byte(b.marker + " ref-1")}); err != nil {
			t.Fatalf("PutUpload of B's content: %v", err)
		}
		cause, ok, err := rt.TakeCancelCause(e.ctx, main, a.gen)
		if err != nil || !ok || cause != store.CauseClientRequest {
			t.Fatalf("TakeCancelCause = %q, %v, %v", cause, ok, err)
		}
		if ended, err := rt.EndTurn(e.ctx, main, a.gen); err != nil || !ended {
			t.Fatalf("EndTurn = %v, %v", ended, err)
		}
		gen, _, err := rt.BeginTurn(e.ctx, main)
		if err != nil {
			t.Fatalf("BeginTurn: %v", err)
		}
		if _, err := rt.ReapCancelCauses(e.ctx); err != nil {
			t.Fatalf("ReapCancelCauses: %v", err)
		}
		// The owner's idle sessions of the same mode: A's only.
		ev, err := rt.EvictSameModeSiblings(e.ctx, store.EvictRequest{OwnerID: trOwner, ChatMode: store.ChatModeChat, ExceptID: main})
		if err != nil || len(ev) != 1 || ev[0].ID != trIdle(a) {
			t.Fatalf("EvictSameModeSiblings = %+v, %v; want A's idle session only", ev, err)
		}
		if ended, err := rt.EndTurn(e.ctx, main, gen); err != nil || !ended {
			t.Fatalf("EndTurn = %v, %v", ended, err)
		}
	})
	for _, sc := range []*trScope{def, b} {
		if got := trDump(t, e, sc.rt); got != before[sc.marker] {
			t.Errorf("%s changed by calls through rt-a:\nnow\n%s\nbefore\n%s", sc.marker, got, before[sc.marker])
		}
		// Its cause is still there to take, once.
		if cause, ok, err := sc.rt.TakeCancelCause(e.ctx, trMain(sc), sc.gen); err != nil || !ok || cause != store.CauseClientRequest {
			t.Errorf("%s: TakeCancelCause after rt-a's calls = %q, %v, %v", sc.marker, cause, ok, err)
		}
	}
	after := trDump(t, e, rt)
	if !strings.Contains(after, "changed-a") || strings.Contains(after, def.marker) {
		t.Errorf("rt-a after its writes reads:\n%s", after)
	}
	for _, name := range []string{"Remove", "Kill"} {
		t.Run(name, func(t *testing.T) {
			if name == "Kill" {
				if _, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: trIdle(a), AgentAlias: "x", WorkspaceDir: "/x", ChatMode: store.ChatModeChat}); err != nil {
					t.Fatal(err)
				}
			}
			id := map[string]string{"Remove": trMain(a), "Kill": trIdle(a)}[name]
			f := map[string]func(context.Context, string) (bool, error){"Remove": rt.Remove, "Kill": rt.Kill}[name]
			if ok, err := f(e.ctx, id); err != nil || !ok {
				t.Fatalf("%s = %v, %v", name, ok, err)
			}
			if ok, err := f(e.ctx, id); err != nil || ok {
				t.Fatalf("second %s = %v, %v", name, ok, err)
			}
		})
	}
	for _, sc := range []*trScope{def, b} {
		// The cause taken above is gone; the rest reads as before.
		got := trDump(t, e, sc.rt)
		if got != before[sc.marker] {
			t.Errorf("%s changed by rt-a's removals:\nnow\n%s\nbefore\n%s", sc.marker, got, before[sc.marker])
		}
	}
}

// trForeign calls every method of rt that takes a runtime session id with
// the ids of scope sc (another tenant's): lookups are ErrNotFound, the
// calls that report "nothing there" (Remove, Kill, Cancel, EndTurn,
// TakeCancelCause) report nothing and leave the turn of sc alone.
func trForeign(t *testing.T, e *env, rt store.Runtime, sc *trScope) {
	t.Helper()
	id := trMain(sc)
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of another tenant's %s = %v, want ErrNotFound", what, id, err)
		}
	}
	err1 := func(_ any, err error) error { return err }
	notFound("Get", err1(rt.Get(e.ctx, id)))
	notFound("Touch", rt.Touch(e.ctx, id))
	model := "intruder"
	notFound("SetOverrides", err1(rt.SetOverrides(e.ctx, id, store.Overrides{Model: &model})))
	notFound("HistoryLen", err1(rt.HistoryLen(e.ctx, id)))
	notFound("HistorySlice", err1(rt.HistorySlice(e.ctx, id, 0, 10)))
	notFound("PutUpload", err1(rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: id, RefID: "ref-1", WorkspacePath: "up/x", Content: []byte("intruder")})))
	notFound("GetUpload", err1(rt.GetUpload(e.ctx, id, "ref-1")))
	_, _, err := rt.ReadUpload(e.ctx, id, "ref-1")
	notFound("ReadUpload", err)
	notFound("ListUploads", err1(rt.ListUploads(e.ctx, store.ListUploadsRequest{SessionID: id})))
	_, _, err = rt.BeginTurn(e.ctx, id)
	notFound("BeginTurn", err)
	if ok, err := rt.Cancel(e.ctx, id, store.CauseAdminKill); ok || err != nil {
		t.Errorf("Cancel of another tenant's %s = %v, %v", id, ok, err)
	}
	if cause, ok, err := rt.TakeCancelCause(e.ctx, id, sc.gen); ok || err != nil {
		t.Errorf("TakeCancelCause of another tenant's turn = %q, %v, %v", cause, ok, err)
	}
	if ended, err := rt.EndTurn(e.ctx, id, sc.gen); ended || err != nil {
		t.Errorf("EndTurn of another tenant's turn = %v, %v", ended, err)
	}
	if ok, err := rt.Remove(e.ctx, id); ok || err != nil {
		t.Errorf("Remove of another tenant's %s = %v, %v", id, ok, err)
	}
	if ok, err := rt.Kill(e.ctx, trIdle(sc)); ok || err != nil {
		t.Errorf("Kill of another tenant's %s = %v, %v", trIdle(sc), ok, err)
	}
	s, err := sc.rt.Get(e.ctx, id)
	if err != nil || !s.Turn.Running || s.Turn.Generation != sc.gen {
		t.Errorf("%s's turn after rt-a's calls: %+v, %v", sc.marker, s.Turn, err)
	}
}
