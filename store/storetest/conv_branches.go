package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunConversationBranches checks fork, rewind and compaction records of
// conversations (store.ConversationBranches), and that every read and
// rewrite path of messages honours the lineage.
func RunConversationBranches(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"ForkHoldsMessagesUpToTheForkPoint", testCbForkPoint},
		{"ForkBadInputWritesNothing", testCbForkBadInput},
		{"ForksOfForks", testCbForkOfFork},
		{"AppendsNeverCrossBetweenForkAndParent", testCbIsolation},
		{"DeletedParentKeepsForksReadable", testCbParentDeleted},
		{"RewindSupersedesAndReadsTheRun", testCbRewind},
		{"RewindKeepsForksIntact", testCbRewindKeepsForks},
		{"RewindBelowTheForkPoint", testCbRewindBelowFork},
		{"RewritesKeepWhatForksRead", testCbRewrites},
		{"RetentionKeepsWhatForksRead", testCbRetention},
		{"CompactionRecordAndSummaryTail", testCbCompaction},
		{"OnlyCompactWritesCompactionRecords", testCbCompactionOnlyByCompact},
		{"CompactionWhileAnotherProcessAppends", testCbCompactionMultiProcess},
		{"HistoryTree", testCbHistory},
		{"HistoryTreeIsDepthFirst", testCbHistoryDepthFirst},
		{"ForkIsAFeedStreamOfItsOwn", testCbFeed},
		{"RewindsAndForksWhileAppending", testCbConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

// cbConv saves conversation id named name with messages "<prefix>0" ..
// "<prefix>n-1".
func (e *env) cbConv(id, prefix string, n int) {
	e.t.Helper()
	c := store.NewConversation(id)
	c.Config.Name = "conv " + id
	e.save(c)
	e.cbAppend(id, prefix, 0, n)
}

// cbAppend appends messages "<prefix>from" .. "<prefix>to-1".
func (e *env) cbAppend(id, prefix string, from, to int) {
	e.t.Helper()
	for i := from; i < to; i++ {
		e.appendMsgs(id, text("user", prefix+strconv.Itoa(i)))
	}
}

// msgTexts renders messages as "seq:text" joined by commas.
func msgTexts(msgs []store.Message) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		s := ""
		if len(m.Content) > 0 {
			s = m.Content[0].Text
		}
		out[i] = strconv.FormatInt(m.Seq, 10) + ":" + s
	}
	return strings.Join(out, ",")
}

// seqTexts is msgTexts of "<prefix>i" at position i for i in [from, to).
func seqTexts(prefix string, from, to int) string {
	out := []string{}
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%d:%s%d", i, prefix, i))
	}
	return strings.Join(out, ",")
}

func joinTexts(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}

// cbAll reads id's whole history through Messages, Load and
// LastMessages, checks that they agree with each other and with
// MessageCount, and returns it rendered.
func (e *env) cbAll(id string) string {
	e.t.Helper()
	page, err := e.conv().Messages(e.ctx, id, 0, store.MaxMessagePage)
	if err != nil {
		e.t.Fatalf("Messages(%q): %v", id, err)
	}
	got := msgTexts(page)
	c, err := e.conv().Load(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Load(%q): %v", id, err)
	}
	if l := msgTexts(c.Messages); l != got {
		e.t.Fatalf("Load(%q) messages %s, Messages %s", id, l, got)
	}
	n, err := e.conv().MessageCount(e.ctx, id)
	if err != nil {
		e.t.Fatalf("MessageCount(%q): %v", id, err)
	}
	if n != int64(len(page)) || c.MessageCount != n {
		e.t.Fatalf("MessageCount(%q) = %d, Load's %d, %d messages read", id, n, c.MessageCount, len(page))
	}
	last, err := e.conv().LastMessages(e.ctx, id, len(page))
	if err != nil {
		e.t.Fatalf("LastMessages(%q): %v", id, err)
	}
	if l := msgTexts(last); l != got {
		e.t.Fatalf("LastMessages(%q) %s, Messages %s", id, l, got)
	}
	return got
}

func (e *env) cbFork(id string, at int64, newID string) store.ConversationSummary {
	e.t.Helper()
	s, err := e.conv().Fork(e.ctx, store.ConversationForkRequest{ID: id, At: at, NewID: newID})
	if err != nil {
		e.t.Fatalf("Fork(%q at %d): %v", id, at, err)
	}
	return s
}

func (e *env) cbRewind(id string, to int64) store.ConversationSummary {
	e.t.Helper()
	s, err := e.conv().Rewind(e.ctx, store.ConversationRewindRequest{ID: id, To: to})
	if err != nil {
		e.t.Fatalf("Rewind(%q to %d): %v", id, to, err)
	}
	return s
}

func (e *env) cbSuperseded(id string) []string {
	e.t.Helper()
	runs, err := e.conv().Superseded(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Superseded(%q): %v", id, err)
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = msgTexts(r.Messages)
	}
	return out
}

func testCbForkPoint(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	if _, err := e.conv().Append(e.ctx, store.AppendRequest{ID: "p", Usage: &store.TokenUsage{PromptTokens: 7, TotalTokens: 7}, Cost: 1.5}); err != nil {
		t.Fatal(err)
	}
	s := e.cbFork("p", 4, "f")
	if s.ID != "f" || s.MessageCount != 5 || s.Version != 1 || s.Name != "conv p" {
		t.Fatalf("fork summary %+v", s)
	}
	if s.TotalUsage.TotalTokens != 0 || s.TotalCost != 0 {
		t.Fatalf("a fork starts its own accounting, got %+v cost %v", s.TotalUsage, s.TotalCost)
	}
	if got, want := e.cbAll("f"), seqTexts("m", 0, 5); got != want {
		t.Fatalf("fork holds %s, want %s", got, want)
	}
	before, err := e.conv().MessagesBefore(e.ctx, "f", 3, 10)
	if err != nil || msgTexts(before) != seqTexts("m", 0, 3) {
		t.Fatalf("MessagesBefore(f, 3) = %s, %v", msgTexts(before), err)
	}
	from, err := e.conv().Messages(e.ctx, "f", 3, 10)
	if err != nil || msgTexts(from) != seqTexts("m", 3, 5) {
		t.Fatalf("Messages(f, 3) = %s, %v", msgTexts(from), err)
	}
	last, err := e.conv().LastMessages(e.ctx, "f", 2)
	if err != nil || msgTexts(last) != seqTexts("m", 3, 5) {
		t.Fatalf("LastMessages(f, 2) = %s, %v", msgTexts(last), err)
	}
	// Its next append follows the fork point.
	res, err := e.conv().AppendMessages(e.ctx, "f", text("user", "f5"))
	if err != nil || res.FirstSeq != 5 || res.MessageCount != 6 {
		t.Fatalf("append to fork: %+v, %v", res, err)
	}
	if got, want := e.cbAll("p"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("parent holds %s, want %s", got, want)
	}
	// The runtime's view of the same id's history is the fork's.
	if _, err := e.st.Runtime().Insert(e.ctx, store.NewRuntimeSession{ID: "f", AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.st.Runtime().HistoryLen(e.ctx, "f"); err != nil || n != 6 {
		t.Fatalf("runtime HistoryLen(f) = %d, %v", n, err)
	}
	if sl, err := e.st.Runtime().HistorySlice(e.ctx, "f", 3, 10); err != nil || msgTexts(sl) != "3:m3,4:m4,5:f5" {
		t.Fatalf("runtime HistorySlice(f, 3) = %s, %v", msgTexts(sl), err)
	}
	// Forking at the last message holds all of it.
	e.cbFork("p", 9, "end")
	if got, want := e.cbAll("end"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("fork at the end holds %s, want %s", got, want)
	}
	// A generated id.
	g := e.cbFork("p", 0, "")
	if g.ID == "" || e.cbAll(g.ID) != "0:m0" {
		t.Fatalf("fork with a generated id: %+v holds %s", g, e.cbAll(g.ID))
	}
}

func testCbForkBadInput(t *testing.T, e *env) {
	e.cbConv("p", "m", 3)
	e.cbConv("taken", "t", 1)
	cases := []struct {
		req  store.ConversationForkRequest
		want error
	}{
		{store.ConversationForkRequest{ID: "p", At: 3, NewID: "x"}, store.ErrInvalidInput},
		{store.ConversationForkRequest{ID: "p", At: -1, NewID: "x"}, store.ErrInvalidInput},
		{store.ConversationForkRequest{ID: "p", At: 1, NewID: "bad\x00id"}, store.ErrInvalidInput},
		{store.ConversationForkRequest{ID: "", At: 1, NewID: "x"}, store.ErrInvalidInput},
		{store.ConversationForkRequest{ID: "missing", At: 0, NewID: "x"}, store.ErrNotFound},
		{store.ConversationForkRequest{ID: "p", At: 1, NewID: "taken"}, store.ErrConflict},
		{store.ConversationForkRequest{ID: "p", At: 1, NewID: "p"}, store.ErrConflict},
	}
	for _, c := range cases {
		if _, err := e.conv().Fork(e.ctx, c.req); !errors.Is(err, c.want) {
			t.Errorf("Fork(%+v) = %v, want %v", c.req, err, c.want)
		}
	}
	page, err := e.conv().List(e.ctx, store.ConversationFilter{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("after refused forks: %+v, %v", page.Items, err)
	}
	if got := e.cbAll("taken"); got != "0:t0" {
		t.Fatalf("taken now holds %s", got)
	}
	if got := e.cbAll("p"); got != seqTexts("m", 0, 3) {
		t.Fatalf("p now holds %s", got)
	}
}

func testCbForkOfFork(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 5, "f1")
	e.cbAppend("f1", "m", 6, 9) // f1: m0..m5 (inherited), m6..m8 (own)
	e.cbFork("f1", 7, "f2")     // crosses f1's fork point
	e.cbFork("f1", 2, "f3")     // inside what f1 inherits
	e.cbFork("f2", 7, "f4")
	e.cbAppend("f2", "x", 8, 10)
	if got, want := e.cbAll("f2"), joinTexts(seqTexts("m", 0, 8), seqTexts("x", 8, 10)); got != want {
		t.Fatalf("f2 %s, want %s", got, want)
	}
	if got, want := e.cbAll("f3"), seqTexts("m", 0, 3); got != want {
		t.Fatalf("f3 %s, want %s", got, want)
	}
	if got, want := e.cbAll("f4"), seqTexts("m", 0, 8); got != want {
		t.Fatalf("f4 %s, want %s", got, want)
	}
	if got, want := e.cbAll("f1"), seqTexts("m", 0, 9); got != want {
		t.Fatalf("f1 %s, want %s", got, want)
	}
}

func testCbIsolation(t *testing.T, e *env) {
	e.cbConv("p", "m", 4)
	e.cbFork("p", 3, "f")
	var wg sync.WaitGroup
	for _, id := range []string{"p", "f"} {
		wg.Go(func() {
			for i := 4; i < 24; i++ {
				if _, err := e.conv().AppendMessages(e.ctx, id, text("user", id+strconv.Itoa(i))); err != nil {
					t.Errorf("append %s: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	base := seqTexts("m", 0, 4)
	if got, want := e.cbAll("p"), joinTexts(base, seqTexts("p", 4, 24)); got != want {
		t.Fatalf("parent %s, want %s", got, want)
	}
	if got, want := e.cbAll("f"), joinTexts(base, seqTexts("f", 4, 24)); got != want {
		t.Fatalf("fork %s, want %s", got, want)
	}
}

func testCbParentDeleted(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 4, "f")
	e.cbFork("p", 7, "g")
	e.cbFork("g", 5, "h") // reads p through g
	if err := e.conv().Delete(e.ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.conv().Exists(e.ctx, "p"); ok || err != nil {
		t.Fatalf("p exists after delete: %v %v", ok, err)
	}
	want := map[string]string{"f": seqTexts("m", 0, 5), "g": seqTexts("m", 0, 8), "h": seqTexts("m", 0, 6)}
	check := func(when string) {
		t.Helper()
		for id, w := range want {
			if got := e.cbAll(id); got != w {
				t.Fatalf("%s: %s holds %s, want %s", when, id, got, w)
			}
		}
	}
	check("parent deleted")
	// The id is free again, and the new p shares nothing with the old one.
	e.cbConv("p", "new", 2)
	if got := e.cbAll("p"); got != seqTexts("new", 0, 2) {
		t.Fatalf("new p holds %s", got)
	}
	check("id reused")
	// Deleting g keeps what h reads of it and of the old p.
	if err := e.conv().Delete(e.ctx, "g"); err != nil {
		t.Fatal(err)
	}
	delete(want, "g")
	check("g deleted")
	page, err := e.conv().List(e.ctx, store.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	if strings.Join(ids, ",") != "f,h,p" {
		t.Fatalf("List %v: retired histories are not conversations", ids)
	}
}

func testCbRewind(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	before, err := e.conv().Info(e.ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	s := e.cbRewind("p", 5)
	if s.MessageCount != 6 || s.Version != before.Version+1 {
		t.Fatalf("after rewind %+v (was version %d)", s, before.Version)
	}
	if got, want := e.cbAll("p"), seqTexts("m", 0, 6); got != want {
		t.Fatalf("rewound to %s, want %s", got, want)
	}
	if got := e.cbSuperseded("p"); len(got) != 1 || got[0] != seqTexts("m", 6, 10) {
		t.Fatalf("superseded %q", got)
	}
	res, err := e.conv().AppendMessages(e.ctx, "p", text("user", "n6"))
	if err != nil || res.FirstSeq != 6 {
		t.Fatalf("append after rewind: %+v %v", res, err)
	}
	// A second rewind, below the first.
	e.cbRewind("p", 2)
	if got, want := e.cbAll("p"), seqTexts("m", 0, 3); got != want {
		t.Fatalf("rewound to %s, want %s", got, want)
	}
	got := e.cbSuperseded("p")
	if len(got) != 2 || got[0] != seqTexts("m", 6, 10) || got[1] != seqTexts("m", 3, 6)+",6:n6" {
		t.Fatalf("superseded %q", got)
	}
	// At the end, nothing changes; past it is refused (as for agent
	// sessions and forks), with the field named.
	v, _ := e.conv().Info(e.ctx, "p")
	if s := e.cbRewind("p", 2); s.Version != v.Version || s.MessageCount != 3 {
		t.Fatalf("rewind to the end changed %+v", s)
	}
	// Refused rewinds change nothing.
	for _, req := range []store.ConversationRewindRequest{
		{ID: "p", To: 0, ExpectVersion: v.Version - 1},
		{ID: "p", To: -2},
		{ID: "missing", To: 0},
		{ID: "p", To: 3},
		{ID: "p", To: 99},
	} {
		if _, err := e.conv().Rewind(e.ctx, req); err == nil {
			t.Fatalf("Rewind(%+v) succeeded", req)
		}
	}
	var inv *store.InvalidInputError
	if _, err := e.conv().Rewind(e.ctx, store.ConversationRewindRequest{ID: "p", To: 99}); !errors.Is(err, store.ErrInvalidInput) ||
		!errors.As(err, &inv) || inv.Field != "to" {
		t.Fatalf("rewind past the end: %v, want ErrInvalidInput naming to", err)
	}
	if got := e.cbAll("p"); got != seqTexts("m", 0, 3) || len(e.cbSuperseded("p")) != 2 {
		t.Fatalf("refused rewinds changed p: %s", got)
	}
	// To -1 supersedes everything; the history starts again at 0.
	e.cbRewind("p", -1)
	if got := e.cbAll("p"); got != "" {
		t.Fatalf("rewound to -1 holds %s", got)
	}
	e.appendMsgs("p", text("user", "again"))
	if got := e.cbAll("p"); got != "0:again" {
		t.Fatalf("after a rewind to -1 and an append: %s", got)
	}
	if got := e.cbSuperseded("p"); len(got) != 3 || got[2] != seqTexts("m", 0, 3) {
		t.Fatalf("superseded %q", got)
	}
}

func testCbRewindKeepsForks(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 8, "f")
	e.cbRewind("p", 3)
	e.cbAppend("p", "n", 4, 12)
	if got, want := e.cbAll("f"), seqTexts("m", 0, 9); got != want {
		t.Fatalf("fork after the parent's rewind: %s, want %s", got, want)
	}
	e.cbRewind("p", 1)
	if got, want := e.cbAll("f"), seqTexts("m", 0, 9); got != want {
		t.Fatalf("fork after the parent's second rewind: %s, want %s", got, want)
	}
	got := e.cbSuperseded("p")
	if len(got) != 2 || got[0] != seqTexts("m", 4, 10) || got[1] != joinTexts(seqTexts("m", 2, 4), seqTexts("n", 4, 12)) {
		t.Fatalf("superseded %q", got)
	}
	if err := e.conv().Delete(e.ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if got, want := e.cbAll("f"), seqTexts("m", 0, 9); got != want {
		t.Fatalf("fork after the parent's delete: %s, want %s", got, want)
	}
}

func testCbRewindBelowFork(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 7, "f")
	e.cbAppend("f", "f", 8, 10)
	e.cbFork("f", 8, "g") // reads one message of f's own
	e.cbRewind("f", 2)
	if got, want := e.cbAll("f"), seqTexts("m", 0, 3); got != want {
		t.Fatalf("f rewound below its fork point: %s, want %s", got, want)
	}
	if got := e.cbSuperseded("f"); len(got) != 1 || got[0] != joinTexts(seqTexts("m", 3, 8), seqTexts("f", 8, 10)) {
		t.Fatalf("superseded %q", got)
	}
	if got, want := e.cbAll("g"), joinTexts(seqTexts("m", 0, 8), "8:f8"); got != want {
		t.Fatalf("g %s, want %s", got, want)
	}
	e.appendMsgs("f", text("user", "f3"))
	if got, want := e.cbAll("f"), seqTexts("m", 0, 3)+",3:f3"; got != want {
		t.Fatalf("f %s, want %s", got, want)
	}
	if got, want := e.cbAll("p"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("p %s, want %s", got, want)
	}
}

func testCbRewrites(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 9, "all")
	e.cbFork("p", 5, "half")
	// Pop of a message a fork reads.
	if m, err := e.conv().PopMessage(e.ctx, "p"); err != nil || m.Seq != 9 {
		t.Fatalf("pop: %+v %v", m, err)
	}
	e.appendMsgs("p", text("user", "n9"))
	if got, want := e.cbAll("all"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("after pop: all %s, want %s", got, want)
	}
	// Trim of a parent whose head forks read.
	if n, err := e.conv().TrimMessages(e.ctx, "p", 3); err != nil || n != 7 {
		t.Fatalf("trim: %d %v", n, err)
	}
	if got, want := e.cbAll("p"), seqTexts("m", 7, 9)+",9:n9"; got != want {
		t.Fatalf("trimmed p %s, want %s", got, want)
	}
	if got, want := e.cbAll("half"), seqTexts("m", 0, 6); got != want {
		t.Fatalf("after trim: half %s, want %s", got, want)
	}
	// Save replacing the parent's history.
	c := store.NewConversation("p")
	c.Messages = []store.Message{text("user", "s0")}
	e.save(c)
	if got := e.cbAll("p"); got != "0:s0" {
		t.Fatalf("saved p %s", got)
	}
	if got, want := e.cbAll("all"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("after save: all %s, want %s", got, want)
	}
	if got, want := e.cbAll("half"), seqTexts("m", 0, 6); got != want {
		t.Fatalf("after save: half %s, want %s", got, want)
	}
	// Pop and trim of a fork: the inherited messages leave its view only.
	if m, err := e.conv().PopMessage(e.ctx, "half"); err != nil || m.Seq != 5 {
		t.Fatalf("pop of an inherited message: %+v %v", m, err)
	}
	if got, want := e.cbAll("half"), seqTexts("m", 0, 5); got != want {
		t.Fatalf("half after pop %s, want %s", got, want)
	}
	e.appendMsgs("half", text("user", "h5"))
	if n, err := e.conv().TrimMessages(e.ctx, "half", 2); err != nil || n != 4 {
		t.Fatalf("trim of a fork: %d %v", n, err)
	}
	if got, want := e.cbAll("half"), "4:m4,5:h5"; got != want {
		t.Fatalf("half after trim %s, want %s", got, want)
	}
	e.appendMsgs("half", text("user", "h6"))
	if got, want := e.cbAll("half"), "4:m4,5:h5,6:h6"; got != want {
		t.Fatalf("half after trim and append %s, want %s", got, want)
	}
	if got, want := e.cbAll("all"), seqTexts("m", 0, 10); got != want {
		t.Fatalf("all %s, want %s", got, want)
	}
}

func testCbRetention(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	e.cbFork("p", 6, "f")
	e.clock.Advance(48 * time.Hour)
	e.appendMsgs("f", text("user", "f7")) // f is recent, p is idle
	e.setPolicy(store.Policy{Kind: store.PolicyMessagesKeepLast, KeepLast: 4})
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: 24 * time.Hour})
	e.sweep(store.SweepOptions{})
	if ok, err := e.conv().Exists(e.ctx, "p"); ok || err != nil {
		t.Fatalf("idle p still exists: %v %v", ok, err)
	}
	if got, want := e.cbAll("f"), seqTexts("m", 4, 7)+",7:f7"; got != want {
		t.Fatalf("fork after retention %s, want %s", got, want)
	}
	// The library calls retention builds on.
	e.cbConv("q", "q", 6)
	e.cbFork("q", 4, "r")
	if n, err := e.conv().DeleteUpdatedBefore(e.ctx, e.clock.Now().Add(time.Second), 0); err != nil || n == 0 {
		t.Fatalf("DeleteUpdatedBefore: %d %v", n, err)
	}
	if ok, _ := e.conv().Exists(e.ctx, "r"); ok {
		t.Fatal("r survived DeleteUpdatedBefore")
	}
	e.cbConv("q", "q", 6)
	e.cbFork("q", 4, "r")
	if res, err := e.conv().TrimAllMessages(e.ctx, 1); err != nil || res.Removed == 0 {
		t.Fatalf("TrimAllMessages: %+v %v", res, err)
	}
	if got := e.cbAll("r"); got != "4:q4" {
		t.Fatalf("r after TrimAllMessages %s", got)
	}
	if got := e.cbAll("q"); got != "5:q5" {
		t.Fatalf("q after TrimAllMessages %s", got)
	}
}

func (e *env) cbCompact(id string, from, to int64, summary string) store.AppendResult {
	e.t.Helper()
	res, err := e.conv().Compact(e.ctx, store.ConversationCompactRequest{ID: id,
		Range: store.CompactionRange{From: from, To: to}, Summary: text("assistant", summary)})
	if err != nil {
		e.t.Fatalf("Compact(%q %d..%d): %v", id, from, to, err)
	}
	return res
}

func (e *env) cbTail(id string, limit int) (string, string) {
	e.t.Helper()
	st, err := e.conv().SummaryTail(e.ctx, id, limit)
	if err != nil {
		e.t.Fatalf("SummaryTail(%q): %v", id, err)
	}
	sum := ""
	if st.Summary != nil {
		sum = msgTexts([]store.Message{*st.Summary})
		if c := st.Summary.Compaction; c != nil {
			sum += fmt.Sprintf("[%d..%d]", c.From, c.To)
		}
	}
	return sum, msgTexts(st.Messages)
}

func testCbCompaction(t *testing.T, e *env) {
	e.cbConv("p", "m", 10)
	if sum, tail := e.cbTail("p", 0); sum != "" || tail != seqTexts("m", 0, 10) {
		t.Fatalf("no summary yet: %q %q", sum, tail)
	}
	res := e.cbCompact("p", 0, 6, "sum A")
	if res.FirstSeq != 10 || res.MessageCount != 11 {
		t.Fatalf("compact: %+v", res)
	}
	e.cbAppend("p", "m", 11, 13)
	sum, tail := e.cbTail("p", 0)
	if sum != "10:sum A[0..6]" || tail != joinTexts(seqTexts("m", 7, 10), seqTexts("m", 11, 13)) {
		t.Fatalf("summary tail: %q %q", sum, tail)
	}
	if _, tail := e.cbTail("p", 2); tail != seqTexts("m", 7, 9) {
		t.Fatalf("summary tail limit 2: %q", tail)
	}
	// The originals stay.
	all, err := e.conv().Messages(e.ctx, "p", 0, 0)
	if err != nil || len(all) != 13 || all[10].Compaction == nil || *all[10].Compaction != (store.CompactionRange{From: 0, To: 6}) {
		t.Fatalf("history after compaction: %s %v", msgTexts(all), err)
	}
	// A fork reads the record it inherits; a later record wins.
	e.cbFork("p", 11, "f")
	if sum, tail := e.cbTail("f", 0); sum != "10:sum A[0..6]" || tail != seqTexts("m", 7, 10)+",11:m11" {
		t.Fatalf("fork's summary tail: %q %q", sum, tail)
	}
	e.cbCompact("f", 0, 11, "sum B")
	if sum, tail := e.cbTail("f", 0); sum != "12:sum B[0..11]" || tail != "" {
		t.Fatalf("fork's second summary: %q %q", sum, tail)
	}
	if sum, _ := e.cbTail("p", 0); sum != "10:sum A[0..6]" {
		t.Fatalf("the fork's record reached the parent: %q", sum)
	}
	// A refused compaction writes nothing.
	for _, r := range []store.CompactionRange{{From: 0, To: 13}, {From: 5, To: 4}, {From: -1, To: 2}} {
		_, err := e.conv().Compact(e.ctx, store.ConversationCompactRequest{ID: "p", Range: r, Summary: text("assistant", "bad")})
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Compact(%+v) = %v", r, err)
		}
	}
	if _, err := e.conv().Compact(e.ctx, store.ConversationCompactRequest{ID: "p", Range: store.CompactionRange{From: 0, To: 1},
		Summary: store.Message{Role: "assistant", Content: text("a", "x").Content, Compaction: &store.CompactionRange{From: 0, To: 1}}}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Compact with a summary that sets Compaction: %v", err)
	}
	if n, _ := e.conv().MessageCount(e.ctx, "p"); n != 13 {
		t.Fatalf("refused compactions wrote: %d messages", n)
	}
	// Load and Save round-trip the records.
	c, err := e.conv().Load(e.ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	c.ID, c.Version = "copy", 0
	e.save(c)
	if sum, _ := e.cbTail("copy", 0); sum != "10:sum A[0..6]" {
		t.Fatalf("saved copy's summary: %q", sum)
	}
}

func testCbCompactionOnlyByCompact(t *testing.T, e *env) {
	e.cbConv("p", "m", 3)
	look := store.Message{Role: "assistant", Content: text("a", "summary of 0..2").Content}
	if _, err := e.conv().AppendMessages(e.ctx, "p", look); err != nil {
		t.Fatal(err)
	}
	if sum, tail := e.cbTail("p", 0); sum != "" || !strings.HasSuffix(tail, "3:summary of 0..2") {
		t.Fatalf("a look-alike append became a record: %q %q", sum, tail)
	}
	forged := look
	forged.Compaction = &store.CompactionRange{From: 0, To: 2}
	if _, err := e.conv().AppendMessages(e.ctx, "p", forged); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("append of a message with a compaction range: %v", err)
	}
	c := store.NewConversation("s")
	c.Messages = []store.Message{text("user", "a"), forged}
	if _, err := e.conv().Save(e.ctx, c); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Save of a record covering itself: %v", err)
	}
	if n, _ := e.conv().MessageCount(e.ctx, "p"); n != 4 {
		t.Fatalf("refused append wrote: %d messages", n)
	}
	if ok, _ := e.conv().Exists(e.ctx, "s"); ok {
		t.Fatal("refused Save wrote")
	}
}

func init() {
	registerRole("conv-append", convAppendRole)
}

// convAppendRole: args are conversation id, writer name, count. It
// appends count messages "<writer>-<i>" and reports {"appended":N}.
func convAppendRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("conv-append wants 3 args, got %d", len(args))
	}
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	appended := 0
	for i := range n {
		if _, err := st.Conversations().AppendMessages(ctx, args[0], text("user", fmt.Sprintf("%s-%d", args[1], i))); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		appended++
	}
	return report(out, map[string]int{"appended": appended})
}

func testCbCompactionMultiProcess(t *testing.T, e *env) {
	e.cbConv("p", "m", 5)
	n := 120
	if raceEnabled {
		n = 40
	}
	cmd, stdout := e.spawn("conv-append", "p", "w", strconv.Itoa(n))
	var appended int
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r struct{ Appended int }
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				appended = r.Appended
			}
		}
	}()
	compactions := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		last, err := e.conv().LastMessages(e.ctx, "p", 1)
		if err != nil {
			t.Fatal(err)
		}
		// Summarise everything read so far; the other process appends
		// while this is decided.
		e.cbCompact("p", 0, last[0].Seq, "sum-"+strconv.Itoa(compactions))
		compactions++
		time.Sleep(time.Millisecond) // let the other process append between compactions
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if appended != n {
		t.Fatalf("helper reports %d appends, want %d", appended, n)
	}
	var full []store.Message
	for from := int64(0); ; {
		page, err := e.conv().Messages(e.ctx, "p", from, store.MaxMessagePage)
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, page...)
		if len(page) < store.MaxMessagePage {
			break
		}
		from = page[len(page)-1].Seq + 1
	}
	if len(full) != 5+n+compactions {
		t.Fatalf("%d messages, want 5 originals, %d appended and %d records", len(full), n, compactions)
	}
	next := 0
	for i, m := range full {
		if m.Seq != int64(i) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		txt := m.Content[0].Text
		if c := m.Compaction; c != nil {
			if c.From != 0 || c.To >= m.Seq || !strings.HasPrefix(txt, "sum-") {
				t.Fatalf("record %q covers %+v at seq %d", txt, *c, m.Seq)
			}
			continue
		}
		if strings.HasPrefix(txt, "w-") {
			if txt != "w-"+strconv.Itoa(next) {
				t.Fatalf("append %q at seq %d, want w-%d", txt, m.Seq, next)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("%d appends in the history, want %d", next, n)
	}
	// The latest summary is followed by everything after its range.
	st, err := e.conv().SummaryTail(e.ctx, "p", store.MaxMessagePage)
	if err != nil || st.Summary == nil {
		t.Fatalf("summary tail: %+v %v", st, err)
	}
	for _, m := range st.Messages {
		if m.Seq <= st.Summary.Compaction.To || m.Seq == st.Summary.Seq {
			t.Fatalf("tail message %d within the summary's range %+v", m.Seq, *st.Summary.Compaction)
		}
	}
	t.Logf("%d compactions while %d appends", compactions, n)
}

func testCbHistory(t *testing.T, e *env) {
	e.cbConv("p", "m", 6)
	e.cbFork("p", 3, "f")
	e.cbFork("f", 1, "g")
	e.cbCompact("f", 0, 2, "sum")
	e.cbRewind("p", 4)
	nodes, err := e.conv().History(e.ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		id := n.ID
		if n.Status != store.NodeLive {
			id = n.Status
		}
		parent := n.Parent
		if strings.HasPrefix(parent, "\x1f") {
			parent = "retired"
		}
		s := fmt.Sprintf("%s<%s@%d n=%d", id, parent, n.ForkNext, n.Messages)
		if n.Current {
			s += " *"
		}
		if len(n.Compactions) > 0 {
			s += fmt.Sprintf(" c=%v", n.Compactions)
		}
		got = append(got, s)
	}
	want := []string{"p<@0 n=5", "f<p@4 n=5 * c=map[4:{0 2}]", "g<f@2 n=2", "superseded<p@5 n=1"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("History:\n got %q\nwant %q", got, want)
	}
	if _, err := e.conv().History(e.ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("History(missing) = %v", err)
	}
	// Lineage is not the conversation's own parent field.
	page, err := e.conv().List(e.ctx, store.ConversationFilter{ParentID: "p"})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("List(parent p) = %+v, %v: a fork's lineage is not its parent id", page.Items, err)
	}
}

func testCbFeed(t *testing.T, e *env) {
	e.cbConv("p", "m", 3)
	e.cbFork("p", 1, "f")
	e.appendMsgs("f", text("user", "f2"))
	w := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.Message], error] {
		return e.st.Feed().Messages(ctx, store.MessageFeed{ID: "f", Limit: 2})
	})
	if got := msgTexts(w.take(3, 2)); got != "0:m0,1:m1,2:f2" {
		t.Fatalf("fork's feed %s", got)
	}
	e.appendMsgs("f", text("user", "f3"))
	e.appendMsgs("p", text("user", "m3")) // the parent's: not in the fork's stream
	if got := msgTexts(w.take(1, 2)); got != "3:f3" {
		t.Fatalf("next delivered %s", got)
	}
	w.quiet(30 * time.Millisecond)
	w.stop()
}

// testCbConcurrent rewinds and forks a conversation while goroutines
// append to it: every acknowledged append ends up in the history or in a
// superseded run exactly once, positions stay gapless, and every fork
// reads what the conversation held at its fork point.
func testCbConcurrent(t *testing.T, e *env) {
	e.cbConv("p", "m", 5)
	writers, n := 4, 30
	if raceEnabled {
		n = 10
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := e.conv().AppendMessages(e.ctx, "p", text("user", id)); err != nil {
					t.Errorf("append %s: %v", id, err)
					return
				}
			}
		})
	}
	forks := map[string]string{}
	for i := 0; i < 6; i++ {
		last, err := e.conv().LastMessages(e.ctx, "p", math.MaxInt16)
		if err != nil {
			t.Fatal(err)
		}
		if len(last) > 2 {
			at := last[len(last)/2].Seq
			id := "fork" + strconv.Itoa(i)
			e.cbFork("p", at, id)
			forks[id] = msgTexts(last[:len(last)/2+1])
			if _, err := e.conv().Rewind(e.ctx, store.ConversationRewindRequest{ID: "p", To: last[len(last)-2].Seq}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	seen := map[string]int{}
	all := e.cbAll("p")
	for _, part := range append([]string{all}, e.cbSuperseded("p")...) {
		for _, m := range strings.Split(part, ",") {
			if _, txt, ok := strings.Cut(m, ":"); ok && strings.HasPrefix(txt, "w") {
				seen[txt]++
			}
		}
	}
	for w := range writers {
		for i := range n {
			if id := fmt.Sprintf("w%d-%d", w, i); seen[id] != 1 {
				t.Errorf("append %s seen %d times", id, seen[id])
			}
		}
	}
	page, _ := e.conv().Messages(e.ctx, "p", 0, store.MaxMessagePage)
	for i, m := range page {
		if m.Seq != int64(i) {
			t.Fatalf("gap: message %d has seq %d", i, m.Seq)
		}
	}
	for id, want := range forks {
		if got := e.cbAll(id); got != want {
			t.Errorf("%s holds %s, want %s", id, got, want)
		}
	}
}
