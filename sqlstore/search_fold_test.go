package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// rawCount runs a count query on the file through a connection of its own.
func rawCount(t *testing.T, path, query string, args ...any) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// pendingSQL counts the keys waiting for the indexer: the queue's rows
// and the plain events appended after the mark, which the indexer takes
// into the queue first (migration 31), when the index is on.
const pendingSQL = `SELECT (SELECT count(*) FROM search_pending) + (SELECT count(*) FROM agent_events
	WHERE id > (SELECT events_mark FROM search_state) AND substr(data, 1, 7) <> 'ssenc1:'
	AND (SELECT enabled FROM search_state) = 1)`

func lagEvent(tok string) store.AgentEvent {
	return store.AgentEvent{Data: []byte(`{"author":"user","content":{"role":"user","parts":[{"text":"` + tok + `"}]}}`)}
}

func hitsOf(t *testing.T, st store.Searcher, tok string) int {
	t.Helper()
	res, err := st.Search(context.Background(), store.SearchQuery{Query: tok, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Hits)
}

// TestSearchIndexLag: an appended event is not indexed in the append's
// transaction (its key is queued), is found by a search at once (the
// search folds the queue first), is found again after the background
// indexer ran, and is indexed exactly once; a deleted item's document goes
// with the fold, and the search after the delete does not return it.
func TestSearchIndexLag(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "lag.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent("lagtoken first")}); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, path, pendingSQL); n != 1 {
		t.Fatalf("queued after the append: %d, want 1", n)
	}
	if n := rawCount(t, path, `SELECT count(*) FROM search_docs`); n != 0 {
		t.Fatalf("documents written by the append: %d, want 0", n)
	}
	if n := hitsOf(t, st, "lagtoken"); n != 1 {
		t.Fatalf("found %d times right after the append, want 1", n)
	}
	if q, d := rawCount(t, path, pendingSQL), rawCount(t, path, `SELECT count(*) FROM search_docs`); q != 0 || d != 1 {
		t.Fatalf("after the search: %d queued, %d documents; want 0, 1", q, d)
	}
	if n := hitsOf(t, st, "lagtoken"); n != 1 {
		t.Fatalf("found %d times by the second search, want 1", n)
	}
	// The conversation's message is queued, then deleted before a fold:
	// no search returns it, and no document is left.
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage("lagtoken message")); err != nil {
		t.Fatal(err)
	}
	if n := hitsOf(t, st, "lagtoken"); n != 2 {
		t.Fatalf("found %d times after the message, want 2", n)
	}
	if _, err := st.Conversations().PopMessage(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := hitsOf(t, st, "lagtoken"); n != 1 {
		t.Fatalf("found %d times after the message's removal, want 1", n)
	}
	st.Close()

	// A store with the background indexer folds what is appended
	// without a search.
	folded := make(chan int64, 100)
	st, err = sqlstore.Open(ctx, path, sqlstore.WithIndexerHook(time.Millisecond, func(n int64) { folded <- n }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const more = 20
	for i := range more {
		if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent(fmt.Sprintf("lagtoken n%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for total < more {
		select {
		case n := <-folded:
			total += n
		case <-time.After(time.Minute):
			t.Fatalf("the indexer folded %d of %d appends in a minute", total, more)
		}
	}
	if total != more {
		t.Fatalf("the indexer folded %d queue rows, want %d", total, more)
	}
	if q, d := rawCount(t, path, pendingSQL), rawCount(t, path, `SELECT count(*) FROM search_docs`); q != 0 || d != 1+more {
		t.Fatalf("after the indexer: %d queued, %d documents; want 0, %d", q, d, 1+more)
	}
	for i := range more {
		if n := hitsOf(t, st, fmt.Sprintf("n%03d", i)); n != 1 {
			t.Fatalf("event %d found %d times, want 1", i, n)
		}
	}
	rep, err := st.CheckSearchIndex(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

// TestSearchIndexOff: WithSearchIndex(false) queues and indexes nothing,
// empties the index, and Search answers store.ErrSearchDisabled; the
// setting is the file's; WithSearchIndex(true) indexes everything stored.
func TestSearchIndexOff(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "off.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent("offtoken before")}); err != nil {
		t.Fatal(err)
	}
	if n := hitsOf(t, st, "offtoken"); n != 1 {
		t.Fatalf("found %d, want 1", n)
	}
	st.Close()

	st, err = sqlstore.Open(ctx, path, sqlstore.WithSearchIndex(false))
	if err != nil {
		t.Fatal(err)
	}
	if q, d := rawCount(t, path, pendingSQL), rawCount(t, path, `SELECT count(*) FROM search_docs`); q != 0 || d != 0 {
		t.Fatalf("index off: %d queued, %d documents; want 0, 0", q, d)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent("offtoken during")}); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, path, pendingSQL); n != 0 {
		t.Fatalf("index off: the append queued %d", n)
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "offtoken"}); !errors.Is(err, store.ErrSearchDisabled) {
		t.Fatalf("search with the index off: %v, want ErrSearchDisabled", err)
	}
	if _, err := st.History(ctx, store.HistoryRequest{App: "a", User: "u"}); !errors.Is(err, store.ErrSearchDisabled) {
		t.Fatalf("history with the index off: %v, want ErrSearchDisabled", err)
	}
	st.Close()

	// The setting is the file's: a store opened without the option
	// keeps it off.
	st, err = sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "offtoken"}); !errors.Is(err, store.ErrSearchDisabled) {
		t.Fatalf("search of a file with the index off: %v, want ErrSearchDisabled", err)
	}
	st.Close()

	st, err = sqlstore.Open(ctx, path, sqlstore.WithSearchIndex(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := hitsOf(t, st, "offtoken"); n != 2 {
		t.Fatalf("index on again: found %d, want 2", n)
	}
	rep, err := st.CheckSearchIndex(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

var _ = registerRelRole("search-unfolded-writer", searchUnfoldedWriterRole)

// searchUnfoldedWriterRole: args are the path. It opens the store with no
// background indexer (nothing it appends is folded), prints "ready", then
// appends events "unfolded<i>" and messages, removing every 5th message
// again, and prints each acknowledged write ("ev <i>", "msg <i>",
// "pop <i>") until it is killed.
func searchUnfoldedWriterRole(ctx context.Context, args []string, out *lineWriter) error {
	st, err := sqlstore.Open(ctx, args[0], sqlstore.WithoutIndexer())
	if err != nil {
		return err
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		return err
	}
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		return err
	}
	if err := out.Line("ready"); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent(fmt.Sprintf("unfolded%05dev", i))}); err != nil {
			return err
		}
		if err := out.Line("ev %d", i); err != nil {
			return err
		}
		if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage(fmt.Sprintf("unfolded%05dmsg", i))); err != nil {
			return err
		}
		if err := out.Line("msg %d", i); err != nil {
			return err
		}
		if i%5 == 0 {
			if _, err := st.Conversations().PopMessage(ctx, "c"); err != nil {
				return err
			}
			if err := out.Line("pop %d", i); err != nil {
				return err
			}
		}
	}
}

// TestSearchKilledBeforeFold: a writer is killed with SIGKILL while the
// items it appended are queued and not folded (it runs no indexer); after
// a restart every acknowledged item is found exactly once, every
// acknowledged removal is never found, and the index equals the content.
func TestSearchKilledBeforeFold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "killed.db")
	h := startHelper(t, "search-unfolded-writer", path)
	h.expectLine(t, "ready", time.Minute)
	evs, msgs := map[int]bool{}, map[int]bool{}
	popped := map[int]bool{}
	deadline := time.After(time.Minute)
	for len(evs) < 60 {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("the writer ended: %v", h.errb.String())
			}
			var kind string
			var i int
			if _, err := fmt.Sscanf(l, "%s %d", &kind, &i); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			switch kind {
			case "ev":
				evs[i] = true
			case "msg":
				msgs[i] = true
			case "pop":
				popped[i] = true
			}
		case <-deadline:
			t.Fatalf("%d events acknowledged in a minute", len(evs))
		}
	}
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.wait()
	queued := rawCount(t, path, pendingSQL)
	if queued < int64(len(evs)) {
		t.Fatalf("%d keys queued at the kill, want at least the %d acknowledged events (nothing folded)", queued, len(evs))
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range evs {
		if n := hitsOf(t, st, "unfolded"+strconv.Itoa(100000 + i)[1:]+"ev"); n != 1 {
			t.Fatalf("event %d found %d times, want 1", i, n)
		}
	}
	last := -1
	for i := range msgs {
		last = max(last, i)
	}
	for i := range msgs {
		want := 1
		if popped[i] {
			want = 0
		}
		n := hitsOf(t, st, "unfolded"+strconv.Itoa(100000 + i)[1:]+"msg")
		if i == last && i%5 == 0 && !popped[i] && n == 0 {
			continue // removed by the kill's last write, not acknowledged
		}
		if n != want {
			t.Fatalf("message %d (removed %v) found %d times, want %d", i, popped[i], n, want)
		}
	}
	if n := rawCount(t, path, pendingSQL); n != 0 {
		t.Fatalf("%d keys still queued after the searches", n)
	}
	rep, err := st.CheckSearchIndex(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

// TestSearchEventsMarkAfterTopDeleted: an event's key reaches the search
// queue from a position in the events' rowids (migration 31). When the
// events at the top of the table go (a deleted session's) the next event
// is given a rowid again; the mark comes down with the delete, so that
// event is indexed and found, and the deleted ones are not.
func TestSearchEventsMarkAfterTopDeleted(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "mark.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()
	keep := store.SessionKey{App: "a", User: "u", Session: "keep"}
	gone := store.SessionKey{App: "a", User: "u", Session: "gone"}
	for _, k := range []store.SessionKey{keep, gone} {
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	appendTok := func(k store.SessionKey, tok string) {
		t.Helper()
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: lagEvent(tok)}); err != nil {
			t.Fatal(err)
		}
	}
	appendTok(keep, "marktoken kept1")
	appendTok(gone, "marktoken gone1")
	appendTok(gone, "marktoken gone2")
	if n := hitsOf(t, st, "marktoken"); n != 3 { // folds: the mark is at the last event
		t.Fatalf("found %d, want 3", n)
	}
	top := rawCount(t, path, `SELECT max(id) FROM agent_events`)
	if err := as.DeleteSession(ctx, gone); err != nil {
		t.Fatal(err)
	}
	appendTok(keep, "marktoken kept2")
	if again := rawCount(t, path, `SELECT max(id) FROM agent_events`); again > top {
		t.Fatalf("the new event's rowid %d is after the deleted ones' (%d): the case is not tested", again, top)
	}
	if n := hitsOf(t, st, "kept2"); n != 1 {
		t.Fatalf("the event appended after the delete found %d times, want 1", n)
	}
	if n := hitsOf(t, st, "marktoken"); n != 2 {
		t.Fatalf("found %d, want 2 (the deleted session's events are gone)", n)
	}
	rep, err := st.CheckSearchIndex(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

// TestSearchReadsEscapedToolArgs: a function call's arguments stored with
// encoding/json's HTML escapes (as ADK's runner writes them, and as tool
// inputs were stored before the store wrote them plain) are found by the
// characters, and the snippet shows the characters, not \u003c.
func TestSearchReadsEscapedToolArgs(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "args.db"), sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := store.SessionKey{App: "a", User: "u", Session: "s"}
	as := st.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
		t.Fatal(err)
	}
	data := `{"author":"model","content":{"role":"model","parts":[{"functionCall":{"name":"render","args":{"html":"\u003ctable\u003e \u0026 rows"}}}]}}`
	if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: store.AgentEvent{Data: []byte(data)}}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Search(ctx, store.SearchQuery{Query: "<table> & rows"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet.Text, `"<table> & rows"`) {
		t.Fatalf("hits %+v: want the call's arguments with their characters", res.Hits)
	}
	if rep, err := st.CheckSearchIndex(ctx); err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

// TestSearchFoldsCaseInAnyScript: a term matches whatever the case of its
// letters beyond ASCII, whether the index finds it (three characters or
// more: its trigrams, then the term checked on the text) or a scan does
// (shorter terms), and the check keeps only items holding the term itself.
func TestSearchFoldsCaseInAnyScript(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "fold.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A read-only store matches the items not yet folded directly: it
	// must find what the index finds once they are folded.
	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	conv := st.Conversations()
	if _, err := conv.Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := conv.AppendMessages(ctx, "c", store.UserMessage("ÄPFEL und Birnen"), store.UserMessage("pfel äst"),
		store.UserMessage("abcd xbcde")); err != nil {
		t.Fatal(err)
	}
	queries := map[string]int{
		"äpfel":  1, // indexed: the trigram index folds, and so does the check
		"Äp":     1, // scanned: SQLite's lower() would fold ASCII only
		"äp":     1,
		"ÄST":    1,
		"abcde":  0, // its trigrams abc, bcd, cde all occur, not the term
		"bcde":   1,
		"pfel ä": 2, // the term "pfel" and the short term "ä" (Ä too)
	}
	for _, s := range []struct {
		name string
		st   *sqlstore.Store
	}{{"not yet folded (read-only)", ro}, {"folded", st}} {
		for q, want := range queries {
			res, err := s.st.Search(ctx, store.SearchQuery{Query: q})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) != want || res.Pending != 0 {
				t.Errorf("%s: %q: %d hits, pending %d; want %d, 0", s.name, q, len(res.Hits), res.Pending, want)
			}
		}
	}
}

// queueGoneAndNew leaves two items queued for the search index of st (a
// store without the indexer): a message holding token, folded in and then
// deleted, and an agent event holding token, appended after it.
func queueGoneAndNew(t *testing.T, st *sqlstore.Store, token string) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage(token+" gone")); err != nil {
		t.Fatal(err)
	}
	if n := hitsOf(t, st, token); n != 1 { // folds
		t.Fatalf("found %d times before the delete, want 1", n)
	}
	if _, err := st.Conversations().PopMessage(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: lagEvent(token + " new")}); err != nil {
		t.Fatal(err)
	}
}

// TestCloseFoldsWithoutIndexer: a store without the background indexer
// (a command-line tool's) folds what it queued when it closes, so that a
// read-only store opened after it (the console's) finds the new item and
// not the deleted one, exactly, without folding anything itself.
func TestCloseFoldsWithoutIndexer(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "closefold.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	queueGoneAndNew(t, st, "closetoken")
	if n := rawCount(t, path, pendingSQL); n != 2 {
		t.Fatalf("queued before Close: %d, want 2 (the deleted message, the new event)", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, path, pendingSQL); n != 0 {
		t.Fatalf("queued after Close: %d, want 0", n)
	}
	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	res, err := ro.Search(ctx, store.SearchQuery{Query: "closetoken"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Kind != store.SearchEvent || res.Pending != 0 {
		t.Fatalf("read-only search after Close: %+v, want the new event only, nothing pending", res)
	}
}

// TestReadOnlySearchLeavesOutQueued: a read-only store cannot fold: its
// search matches the items not yet folded directly (the new event is
// found, the deleted message is not, nothing pending), unless more than
// a fold batch of them waits: then it leaves them out and counts them
// (SearchResult.Pending); its Close folds nothing.
func TestReadOnlySearchLeavesOutQueued(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "rosearch.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	queueGoneAndNew(t, st, "rotoken")
	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	res, err := ro.Search(ctx, store.SearchQuery{Query: "rotoken"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Kind != store.SearchEvent || res.Pending != 0 {
		t.Fatalf("read-only search: hits %v, pending %d; want the new event, 0", res.Hits, res.Pending)
	}
	// More than a fold batch waits: left out, and counted.
	var many []store.Message
	for i := range sqlcore.DefaultFoldBatch {
		many = append(many, store.UserMessage(fmt.Sprintf("bulk %d", i)))
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c", many...); err != nil {
		t.Fatal(err)
	}
	res, err = ro.Search(ctx, store.SearchQuery{Query: "rotoken"})
	if err != nil {
		t.Fatal(err)
	}
	// The new messages take the seqs from 0 on, the deleted one's too:
	// one key less than queue rows.
	if want := sqlcore.DefaultFoldBatch + 1; len(res.Hits) != 0 || res.Pending != want {
		t.Fatalf("read-only search behind a long queue: hits %v, pending %d; want none, %d", res.Hits, res.Pending, want)
	}
	ro.Close()
	if n := rawCount(t, path, pendingSQL); n != sqlcore.DefaultFoldBatch+2 {
		t.Fatalf("queued after the read-only store's Close: %d, want %d", n, sqlcore.DefaultFoldBatch+2)
	}
}
