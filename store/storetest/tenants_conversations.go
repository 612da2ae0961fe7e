package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// The ids of the conversation isolation test, qualified per scope by tcID
// (conversation ids are global keys: two tenants cannot both hold one).
const (
	tcMain  = "tn-conv"
	tcOther = "tn-conv-other"
	tcFork  = "tn-conv-fork"
	tcURI   = "a3s://tool-output/tenant/a"
	tcRun   = "run-tenant"
)

// tcScope is one side of the conversation isolation test.
type tcScope struct {
	name   string // "" for the default tenant
	marker string
	c      store.Conversations
}

// tcID qualifies a seed id by scope: conversation ids are global keys,
// so each scope's copy of the seed has ids of its own (the same shape in
// each scope), and tcOwnID is the id of the one conversation the tests
// through tenant A try to reach in the other scopes.
func tcID(sc tcScope, id string) string {
	if sc.name == "" {
		return id + "@default"
	}
	return id + "@" + sc.name
}

// tcSeed writes scope sc's conversations: a conversation with messages,
// usage and cost, an artifact, traces, a run with events and a report; a
// fork of it; and a second conversation rewound and compacted. Every
// text names the scope's marker.
func tcSeed(t *testing.T, e *env, sc tcScope) {
	t.Helper()
	m := sc.marker
	main, other, fork := tcID(sc, tcMain), tcID(sc, tcOther), tcID(sc, tcFork)
	conv := store.NewConversation(main)
	conv.Config.Name = m
	conv.Messages = []store.Message{store.UserMessage(m + " 0"), store.AssistantMessage(m + " 1")}
	if _, err := sc.c.Save(e.ctx, conv); err != nil {
		t.Fatalf("%s: save: %v", m, err)
	}
	cost := 0.5
	if _, err := sc.c.Append(e.ctx, store.AppendRequest{ID: main, Messages: []store.Message{store.UserMessage(m + " 2")},
		Usage: &store.TokenUsage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, Cost: cost,
		CostRecords: []store.CostRecord{{Model: m, Provider: "p", TotalTokens: 7, CostUSD: &cost}}}); err != nil {
		t.Fatalf("%s: append: %v", m, err)
	}
	art := seedArtifact()
	art.URI, art.Content = tcURI, m
	if err := sc.c.PutArtifacts(e.ctx, main, art); err != nil {
		t.Fatalf("%s: artifacts: %v", m, err)
	}
	if _, err := sc.c.AppendTraces(e.ctx, main, seedTrace(m, true, 0, 1, 2)); err != nil {
		t.Fatalf("%s: traces: %v", m, err)
	}
	run := seedRun()
	run.Snapshot.ID, run.Snapshot.Prompt = tcRun, m
	if err := sc.c.PutRuns(e.ctx, main, run); err != nil {
		t.Fatalf("%s: runs: %v", m, err)
	}
	if _, err := sc.c.AppendRunEvents(e.ctx, main, tcRun, store.RunEvent{Event: raw(map[string]any{"type": "step", "text": m})}); err != nil {
		t.Fatalf("%s: run events: %v", m, err)
	}
	rep := seedReport()
	rep.Subject = "program:" + m
	if err := sc.c.AppendReports(e.ctx, main, rep); err != nil {
		t.Fatalf("%s: reports: %v", m, err)
	}
	if _, err := sc.c.Fork(e.ctx, store.ConversationForkRequest{ID: main, At: 1, NewID: fork}); err != nil {
		t.Fatalf("%s: fork: %v", m, err)
	}
	oc := store.NewConversation(other)
	for i := range 4 {
		oc.Messages = append(oc.Messages, store.UserMessage(fmt.Sprintf("%s other %d", m, i)))
	}
	if _, err := sc.c.Save(e.ctx, oc); err != nil {
		t.Fatalf("%s: save other: %v", m, err)
	}
	if _, err := sc.c.Rewind(e.ctx, store.ConversationRewindRequest{ID: other, To: 2}); err != nil {
		t.Fatalf("%s: rewind: %v", m, err)
	}
	if _, err := sc.c.Compact(e.ctx, store.ConversationCompactRequest{ID: other, Range: store.CompactionRange{From: 0, To: 1},
		Summary: store.AssistantMessage(m + " summary")}); err != nil {
		t.Fatalf("%s: compact: %v", m, err)
	}
}

// tcDump reads everything c can see through every read method of the
// conversation facet, as text.
func tcDump(t *testing.T, e *env, c store.Conversations) string {
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
		p, err := c.List(e.ctx, store.ConversationFilter{After: after, Limit: 2})
		put("list", p, err)
		for _, s := range p.Items {
			ids = append(ids, s.ID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	for _, id := range ids {
		v, err := c.Load(e.ctx, id)
		put("load "+id, v, err)
		info, err := c.Info(e.ctx, id)
		put("info", info, err)
		ok, err := c.Exists(e.ctx, id)
		put("exists", ok, err)
		msgs, err := c.Messages(e.ctx, id, 0, 100)
		put("messages", msgs, err)
		msgs, err = c.MessagesBefore(e.ctx, id, 100, 100)
		put("messages before", msgs, err)
		msgs, err = c.LastMessages(e.ctx, id, 2)
		put("last messages", msgs, err)
		n, err := c.MessageCount(e.ctx, id)
		put("count", n, err)
		arts, err := c.Artifacts(e.ctx, id)
		put("artifacts", arts, err)
		if len(arts) > 0 {
			a, err := c.Artifact(e.ctx, id, arts[0].URI)
			put("artifact", a, err)
		}
		trs, err := c.Traces(e.ctx, id, 0, 100)
		put("traces", trs, err)
		runs, err := c.Runs(e.ctx, id)
		put("runs", runs, err)
		for _, r := range runs {
			one, err := c.Run(e.ctx, id, r.Snapshot.ID)
			put("run", one, err)
		}
		reps, err := c.Reports(e.ctx, id)
		put("reports", reps, err)
		tail, err := c.SummaryTail(e.ctx, id, 100)
		put("summary tail", tail, err)
		sup, err := c.Superseded(e.ctx, id)
		put("superseded", sup, err)
		hist, err := c.History(e.ctx, id)
		put("history", hist, err)
	}
	return b.String()
}

// testTenantConversations seeds conversations in the default tenant and
// in tenants A and B, then calls every method of the conversation facet
// through A: reads find A's rows only, another tenant's id is ErrNotFound
// for every call that takes one, a create under another tenant's id is
// ErrConflict, and B and the default tenant read exactly as before.
func testTenantConversations(t *testing.T, e *env) {
	def := tcScope{name: "", marker: "cmark-default", c: e.conv()}
	a := tcScope{name: "conv-a", marker: "cmark-a", c: e.tenant(t, "conv-a").Conversations()}
	b := tcScope{name: "conv-b", marker: "cmark-b", c: e.tenant(t, "conv-b").Conversations()}
	scopes := []tcScope{def, a, b}
	for _, sc := range scopes {
		tcSeed(t, e, sc)
	}
	before := map[string]string{}
	for _, sc := range scopes {
		before[sc.marker] = tcDump(t, e, sc.c)
		for _, other := range scopes {
			if other.marker != sc.marker && strings.Contains(before[sc.marker], other.marker) {
				t.Fatalf("%s reads rows of %s:\n%s", sc.marker, other.marker, before[sc.marker])
			}
		}
		if strings.Count(before[sc.marker], "\"id\":\""+tcID(sc, tcMain)+"\"") == 0 || !strings.Contains(before[sc.marker], sc.marker) {
			t.Fatalf("%s does not read its own rows:\n%s", sc.marker, before[sc.marker])
		}
	}
	if got := tcDump(t, e, e.tenant(t, "conv-a").Conversations()); got != before[a.marker] {
		t.Fatalf("a second handle of conv-a reads\n%s\nwant\n%s", got, before[a.marker])
	}

	onlyA := func(t *testing.T, what string, v any) {
		t.Helper()
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{def.marker, b.marker} {
			if strings.Contains(string(j), other) {
				t.Errorf("%s through conv-a returns a row of %s: %s", what, other, j)
			}
		}
	}
	ok := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	main, other, fork := tcID(a, tcMain), tcID(a, tcOther), tcID(a, tcFork)
	calls := []struct {
		name string
		fn   func(t *testing.T, c store.Conversations)
	}{
		{"Reads", func(t *testing.T, c store.Conversations) {
			v, err := c.Load(e.ctx, main)
			ok(t, "Load", err)
			if len(v.Messages) != 3 || v.Config.Name != a.marker || len(v.CostRecords) != 1 {
				t.Fatalf("Load = %+v", v)
			}
			onlyA(t, "Load", v)
			p, err := c.List(e.ctx, store.ConversationFilter{Limit: 100})
			ok(t, "List", err)
			if len(p.Items) != 3 {
				t.Fatalf("List = %d conversations, want A's 3", len(p.Items))
			}
			onlyA(t, "List", p)
			p, err = c.List(e.ctx, store.ConversationFilter{UpdatedBefore: e.clock.Now().Add(time.Hour), Limit: 100})
			ok(t, "List updated before", err)
			if len(p.Items) != 3 {
				t.Fatalf("List updated before = %d conversations, want A's 3", len(p.Items))
			}
			msgs, err := c.Messages(e.ctx, fork, 0, 100)
			ok(t, "Messages of the fork", err)
			if len(msgs) != 2 {
				t.Fatalf("the fork reads %d messages, want 2", len(msgs))
			}
			onlyA(t, "Messages of the fork", msgs)
			r, err := c.Run(e.ctx, main, tcRun)
			ok(t, "Run", err)
			if len(r.Events) != 2 {
				t.Fatalf("Run = %+v", r)
			}
			onlyA(t, "Run", r)
			hist, err := c.History(e.ctx, main)
			ok(t, "History", err)
			if len(hist) != 2 {
				t.Fatalf("History = %+v, want the conversation and its fork", hist)
			}
			sup, err := c.Superseded(e.ctx, other)
			ok(t, "Superseded", err)
			if len(sup) != 1 {
				t.Fatalf("Superseded = %+v", sup)
			}
			onlyA(t, "Superseded", sup)
		}},
		{"OtherTenantsIDsAreNotFound", func(t *testing.T, c store.Conversations) {
			for _, id := range []string{tcID(b, tcMain), tcID(def, tcMain), tcID(b, tcFork), tcID(def, tcOther)} {
				tcForeign(t, e, c, id)
			}
		}},
		{"CreateOfATakenIDIsConflict", func(t *testing.T, c store.Conversations) {
			taken := tcID(b, tcMain)
			conv := store.NewConversation(taken)
			conv.Config.Name = "overwritten-by-a"
			if _, err := c.Save(e.ctx, conv); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Save of B's id = %v, want ErrConflict", err)
			}
			conv.Version = 1
			if _, err := c.Save(e.ctx, conv); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("conditional Save of B's id = %v, want ErrConflict", err)
			}
			if _, err := c.Fork(e.ctx, store.ConversationForkRequest{ID: main, At: 0, NewID: tcID(def, tcFork)}); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Fork onto the default tenant's id = %v, want ErrConflict", err)
			}
			var ce *store.ConflictError
			_, err := c.Save(e.ctx, conv)
			if !errors.As(err, &ce) || strings.Contains(err.Error(), b.marker) || strings.Contains(fmt.Sprint(ce), b.marker) {
				t.Fatalf("the conflict tells more than that the id is taken: %v", err)
			}
		}},
		{"SaveAndAppend", func(t *testing.T, c store.Conversations) {
			conv := store.NewConversation("conv-new-of-a")
			conv.Config.Name = a.marker
			_, err := c.Save(e.ctx, conv)
			ok(t, "Save", err)
			v, err := c.Load(e.ctx, main)
			ok(t, "Load", err)
			v.Config.Name = "changed-a"
			_, err = c.Save(e.ctx, v)
			ok(t, "Save existing", err)
			_, err = c.AppendMessages(e.ctx, main, store.UserMessage("changed-a 3"))
			ok(t, "AppendMessages", err)
			res, err := c.Append(e.ctx, store.AppendRequest{ID: main, Messages: []store.Message{store.UserMessage("changed-a 4")}})
			ok(t, "Append", err)
			if res.MessageCount != 5 {
				t.Fatalf("Append = %+v, want 5 messages (A's own history)", res)
			}
			m, err := c.PopMessage(e.ctx, main)
			ok(t, "PopMessage", err)
			if m.Text() != "changed-a 4" {
				t.Fatalf("PopMessage = %q", m.Text())
			}
			_, err = c.TrimMessages(e.ctx, main, 3)
			ok(t, "TrimMessages", err)
			tr, err := c.TrimAllMessages(e.ctx, 2)
			ok(t, "TrimAllMessages", err)
			if tr.Conversations > 3 {
				t.Fatalf("TrimAllMessages through A trimmed %d conversations", tr.Conversations)
			}
		}},
		{"Records", func(t *testing.T, c store.Conversations) {
			art := seedArtifact()
			art.URI, art.Content = tcURI, "changed-a"
			ok(t, "PutArtifacts", c.PutArtifacts(e.ctx, main, art))
			_, err := c.AppendTraces(e.ctx, main, seedTrace("changed-a", true, 0, 1, 2))
			ok(t, "AppendTraces", err)
			ok(t, "SaveTraces", c.SaveTraces(e.ctx, other, []store.TraceEvent{seedTrace("changed-a", false, 1, 1, 1)}))
			run := seedRun()
			run.Snapshot.ID, run.Snapshot.Prompt = tcRun, "changed-a"
			ok(t, "PutRuns", c.PutRuns(e.ctx, main, run))
			_, err = c.AppendRunEvents(e.ctx, main, tcRun, store.RunEvent{Event: raw(map[string]any{"type": "changed-a"})})
			ok(t, "AppendRunEvents", err)
			ok(t, "AppendReports", c.AppendReports(e.ctx, main, seedReport()))
			ok(t, "SaveReports", c.SaveReports(e.ctx, other, []store.VerificationReport{seedReport()}))
		}},
		{"Branches", func(t *testing.T, c store.Conversations) {
			// The trims above moved the start of main's history: work
			// from the positions it has.
			_, err := c.AppendMessages(e.ctx, main, store.UserMessage("changed-a 5"), store.UserMessage("changed-a 6"))
			ok(t, "AppendMessages", err)
			msgs, err := c.Messages(e.ctx, main, 0, 100)
			ok(t, "Messages", err)
			first, last := msgs[0].Seq, msgs[len(msgs)-1].Seq
			_, err = c.Fork(e.ctx, store.ConversationForkRequest{ID: main, At: last, NewID: "conv-second-fork-of-a"})
			ok(t, "Fork", err)
			if _, err := c.Fork(e.ctx, store.ConversationForkRequest{ID: main, At: last, NewID: fork}); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Fork onto A's existing fork = %v, want ErrConflict", err)
			}
			_, err = c.Rewind(e.ctx, store.ConversationRewindRequest{ID: main, To: last - 1})
			ok(t, "Rewind", err)
			_, err = c.Compact(e.ctx, store.ConversationCompactRequest{ID: main, Range: store.CompactionRange{From: first, To: first},
				Summary: store.AssistantMessage("changed-a summary")})
			ok(t, "Compact", err)
			tail, err := c.SummaryTail(e.ctx, main, 10)
			ok(t, "SummaryTail", err)
			if tail.Summary == nil || tail.Summary.Text() != "changed-a summary" {
				t.Fatalf("SummaryTail = %+v", tail)
			}
		}},
		{"Delete", func(t *testing.T, c store.Conversations) {
			// The conversation the fork reads: its messages go to a
			// retired history of A.
			ok(t, "Delete", c.Delete(e.ctx, main))
			if err := c.Delete(e.ctx, main); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second Delete = %v, want ErrNotFound", err)
			}
			msgs, err := c.Messages(e.ctx, fork, 0, 100)
			ok(t, "Messages of the fork after its parent's delete", err)
			if len(msgs) != 2 {
				t.Fatalf("the fork reads %d messages after its parent's delete, want 2", len(msgs))
			}
			onlyA(t, "Messages of the fork", msgs)
		}},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) { call.fn(t, a.c) })
	}
	tcUnchanged(t, e, before, def, b)
	after := tcDump(t, e, a.c)
	if !strings.Contains(after, "changed-a") {
		t.Errorf("conv-a's writes are not visible to it:\n%s", after)
	}
	for _, m := range []string{def.marker, b.marker} {
		if strings.Contains(after, m) {
			t.Errorf("conv-a reads rows of %s after its writes:\n%s", m, after)
		}
	}

	// Last, the one call that walks all of a tenant's conversations and
	// deletes them.
	e.clock.Advance(time.Minute)
	n, err := a.c.DeleteUpdatedBefore(e.ctx, e.clock.Now(), 0)
	if err != nil || n == 0 {
		t.Fatalf("DeleteUpdatedBefore through conv-a = %d, %v", n, err)
	}
	if p, err := a.c.List(e.ctx, store.ConversationFilter{Limit: 100}); err != nil || len(p.Items) != 0 {
		t.Fatalf("conv-a lists %d conversations after DeleteUpdatedBefore (%v)", len(p.Items), err)
	}
	tcUnchanged(t, e, before, def, b)
}

// tcUnchanged fails when a scope reads other than it did before.
func tcUnchanged(t *testing.T, e *env, before map[string]string, scopes ...tcScope) {
	t.Helper()
	for _, sc := range scopes {
		if got := tcDump(t, e, sc.c); got != before[sc.marker] {
			t.Errorf("%s changed by calls through another tenant:\nnow\n%s\nbefore\n%s", sc.marker, got, before[sc.marker])
		}
	}
}

// tcForeign calls every method of c that takes a conversation id with id,
// another tenant's: each is ErrNotFound.
func tcForeign(t *testing.T, e *env, c store.Conversations, id string) {
	t.Helper()
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of another tenant's %s = %v, want ErrNotFound", what, id, err)
		}
	}
	err1 := func(_ any, err error) error { return err }
	notFound("Load", err1(c.Load(e.ctx, id)))
	notFound("Info", err1(c.Info(e.ctx, id)))
	if ok, err := c.Exists(e.ctx, id); ok || err != nil {
		t.Errorf("Exists of another tenant's %s = %v, %v", id, ok, err)
	}
	notFound("Messages", err1(c.Messages(e.ctx, id, 0, 10)))
	notFound("MessagesBefore", err1(c.MessagesBefore(e.ctx, id, 10, 10)))
	notFound("LastMessages", err1(c.LastMessages(e.ctx, id, 2)))
	notFound("MessageCount", err1(c.MessageCount(e.ctx, id)))
	notFound("Artifacts", err1(c.Artifacts(e.ctx, id)))
	notFound("Artifact", err1(c.Artifact(e.ctx, id, tcURI)))
	notFound("Traces", err1(c.Traces(e.ctx, id, 0, 10)))
	notFound("Runs", err1(c.Runs(e.ctx, id)))
	notFound("Run", err1(c.Run(e.ctx, id, tcRun)))
	notFound("Reports", err1(c.Reports(e.ctx, id)))
	notFound("SummaryTail", err1(c.SummaryTail(e.ctx, id, 10)))
	notFound("Superseded", err1(c.Superseded(e.ctx, id)))
	notFound("History", err1(c.History(e.ctx, id)))
	notFound("AppendMessages", err1(c.AppendMessages(e.ctx, id, store.UserMessage("intruder"))))
	notFound("Append", err1(c.Append(e.ctx, store.AppendRequest{ID: id, Messages: []store.Message{store.UserMessage("intruder")}})))
	notFound("PopMessage", err1(c.PopMessage(e.ctx, id)))
	notFound("TrimMessages", err1(c.TrimMessages(e.ctx, id, 0)))
	notFound("PutArtifacts", c.PutArtifacts(e.ctx, id, seedArtifact()))
	notFound("AppendTraces", err1(c.AppendTraces(e.ctx, id, seedTrace("intruder", true, 0, 1, 1))))
	notFound("SaveTraces", c.SaveTraces(e.ctx, id, nil))
	notFound("PutRuns", c.PutRuns(e.ctx, id, seedRun()))
	notFound("AppendRunEvents", err1(c.AppendRunEvents(e.ctx, id, tcRun, store.RunEvent{Event: raw(map[string]any{"type": "intruder"})})))
	notFound("AppendReports", c.AppendReports(e.ctx, id, seedReport()))
	notFound("SaveReports", c.SaveReports(e.ctx, id, nil))
	notFound("Fork", err1(c.Fork(e.ctx, store.ConversationForkRequest{ID: id, At: 0, NewID: "intruder-fork"})))
	notFound("Rewind", err1(c.Rewind(e.ctx, store.ConversationRewindRequest{ID: id, To: 0})))
	notFound("Compact", err1(c.Compact(e.ctx, store.ConversationCompactRequest{ID: id, Range: store.CompactionRange{From: 0, To: 0},
		Summary: store.AssistantMessage("intruder")})))
	notFound("Delete", c.Delete(e.ctx, id))
}

// testTenantConversationsConcurrent: two tenants append to conversations
// from many goroutines at once; each tenant's conversations hold exactly
// its own messages in gapless positions, and a create of the other
// tenant's id never succeeds.
func testTenantConversationsConcurrent(t *testing.T, e *env) {
	const convs, writers, appends = 3, 4, 5
	names := []string{"ct1", "ct2"}
	id := func(name string, i int) string { return fmt.Sprintf("race-conv-%s-%d", name, i) }
	for _, name := range names {
		c := e.tenant(t, name).Conversations()
		for i := range convs {
			if _, err := c.Save(e.ctx, store.NewConversation(id(name, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names)*convs*writers+len(names))
	for ni, name := range names {
		c := e.tenant(t, name).Conversations()
		for i := range convs {
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range appends {
						if _, err := c.AppendMessages(e.ctx, id(name, i), store.UserMessage(fmt.Sprintf("%s w%d-%d", name, w, n))); err != nil {
							errs <- fmt.Errorf("%s: append to %d: %w", name, i, err)
							return
						}
					}
				}()
			}
		}
		// Meanwhile each tenant tries to take the other's ids.
		wg.Add(1)
		go func() {
			defer wg.Done()
			theirs := names[1-ni]
			for i := range convs {
				if _, err := c.Save(e.ctx, store.NewConversation(id(theirs, i))); !errors.Is(err, store.ErrConflict) {
					errs <- fmt.Errorf("%s: Save of %s's id = %v, want ErrConflict", name, theirs, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, name := range names {
		c := e.tenant(t, name).Conversations()
		for i := range convs {
			msgs, err := c.Messages(e.ctx, id(name, i), 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != writers*appends {
				t.Errorf("%s conversation %d holds %d messages, want %d", name, i, len(msgs), writers*appends)
			}
			for j, m := range msgs {
				if m.Seq != int64(j) || !strings.HasPrefix(m.Text(), name+" ") {
					t.Errorf("%s conversation %d: message %d at %d is %q", name, i, j, m.Seq, m.Text())
				}
			}
		}
	}
	if p, err := e.conv().List(e.ctx, store.ConversationFilter{Limit: 100}); err != nil || len(p.Items) != 0 {
		t.Fatalf("the default tenant lists %d of the tenants' conversations (%v)", len(p.Items), err)
	}
}

// testTenantConversationFeed: a tenant's change feed delivers the
// messages, traces and run events of its own conversations, and another
// tenant's conversation id is ErrNotFound on each stream.
func testTenantConversationFeed(t *testing.T, e *env) {
	ta, tb := e.tenant(t, "feedc-a"), e.tenant(t, "feedc-b")
	own, theirs := "feedc-conv-a", "feedc-conv-b"
	for _, s := range []struct {
		c    store.Conversations
		id   string
		text string
	}{{ta.Conversations(), own, "from-a"}, {tb.Conversations(), theirs, "from-b"}, {e.conv(), "feedc-conv-default", "from-default"}} {
		if _, err := s.c.Save(e.ctx, store.NewConversation(s.id)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.c.AppendMessages(e.ctx, s.id, store.UserMessage(s.text)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.c.AppendTraces(e.ctx, s.id, seedTrace(s.text, true, 0, 1, 1)); err != nil {
			t.Fatal(err)
		}
		run := seedRun()
		run.Snapshot.ID = tcRun
		if err := s.c.PutRuns(e.ctx, s.id, run); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, crossStoreTimeout)
	defer cancel()
	f := ta.Feed()
	first := func(what string, seq func(yield func(int, error) bool)) (int, error) {
		for n, err := range seq {
			return n, err
		}
		return 0, fmt.Errorf("%s: no batch", what)
	}
	msgs := func(id string) func(yield func(int, error) bool) {
		return func(yield func(int, error) bool) {
			for b, err := range f.Messages(ctx, store.MessageFeed{ID: id}) {
				for _, m := range b.Items {
					if m.Text() != "from-a" {
						t.Errorf("the messages stream of %s delivers %q", id, m.Text())
					}
				}
				if !yield(len(b.Items), err) {
					return
				}
			}
		}
	}
	traces := func(id string) func(yield func(int, error) bool) {
		return func(yield func(int, error) bool) {
			for b, err := range f.Traces(ctx, store.TraceFeed{ID: id}) {
				if !yield(len(b.Items), err) {
					return
				}
			}
		}
	}
	runEvents := func(id string) func(yield func(int, error) bool) {
		return func(yield func(int, error) bool) {
			for b, err := range f.RunEvents(ctx, store.RunEventFeed{ID: id, RunID: tcRun}) {
				if !yield(len(b.Items), err) {
					return
				}
			}
		}
	}
	for name, stream := range map[string]func(string) func(yield func(int, error) bool){
		"Messages": msgs, "Traces": traces, "RunEvents": runEvents,
	} {
		if n, err := first(name, stream(own)); err != nil || n != 1 {
			t.Errorf("%s of the tenant's conversation: %d items, %v; want 1", name, n, err)
		}
		for _, id := range []string{theirs, "feedc-conv-default"} {
			if _, err := first(name, stream(id)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s of another tenant's %s = %v, want ErrNotFound", name, id, err)
			}
		}
	}
}
