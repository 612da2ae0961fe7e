package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestSearchPendingNote: the console's store is read-only and cannot fold
// the search queue; its search page matches the items not yet folded
// directly (the new message is found, the one deleted since the last
// fold is not, no note), unless more than a fold batch of them waits:
// then it leaves them out and says in words that recent changes are not
// indexed yet (the JSON twin's result.pending); once the writer closed
// (folding its queue) the page finds the new message and says nothing of
// it.
func TestSearchPendingNote(t *testing.T) {
	ctx := context.Background()
	loc := sqltest.FreshPath(t, "sessions.db")
	clock := storetest.NewClock()
	w, err := sqlstore.Open(ctx, loc, sqlstore.WithClock(clock.Now), sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conversations().AppendMessages(ctx, "c", store.UserMessage("pendtoken old")); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Search(ctx, store.SearchQuery{Query: "pendtoken"}); err != nil || len(res.Hits) != 1 { // folds
		t.Fatalf("writer's search: %d hits, %v", len(res.Hits), err)
	}
	if _, err := w.Conversations().PopMessage(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conversations().AppendMessages(ctx, "c", store.UserMessage("pendtoken new")); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlstore.Open(ctx, loc, sqlstore.WithClock(clock.Now), sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	srv := newServer(t, ro, fixture{Clock: clock}, console.Options{})
	exact := func(when string) {
		t.Helper()
		_, body := get(t, srv, prefix+"/search?q=pendtoken")
		if strings.Contains(body, `id="search-pending"`) || strings.Count(body, "<mark>pendtoken</mark>") != 1 || !strings.Contains(body, "<mark>pendtoken</mark> new") {
			t.Errorf("search page %s: want the new message only, no note:\n%s", when, body)
		}
	}
	exact("before the fold")
	var page struct {
		Result store.SearchResult `json:"result"`
	}
	getJSON(t, srv, "/search?q=pendtoken&format=json", &page)
	if page.Result.Pending != 0 || len(page.Result.Hits) != 1 {
		t.Errorf("JSON twin before the fold: pending %d, %d hits; want 0, 1", page.Result.Pending, len(page.Result.Hits))
	}
	// More than a fold batch waits: left out, and said.
	var many []store.Message
	for i := range sqlcore.DefaultFoldBatch {
		many = append(many, store.UserMessage(fmt.Sprintf("bulk %d", i)))
	}
	if _, err := w.Conversations().AppendMessages(ctx, "c", many...); err != nil {
		t.Fatal(err)
	}
	n := sqlcore.DefaultFoldBatch + 1 // the bulk and the new message
	_, body := get(t, srv, prefix+"/search?q=pendtoken")
	for _, want := range []string{`id="search-pending"`, fmt.Sprintf("%d recent changes are not indexed yet", n), "sessionctl reindex", "no matches"} {
		if !strings.Contains(body, want) {
			t.Errorf("search page behind a long queue lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<mark>pendtoken</mark>") {
		t.Errorf("search page behind a long queue shows a hit (the deleted message's old text):\n%s", body)
	}
	getJSON(t, srv, "/search?q=pendtoken&format=json", &page)
	if page.Result.Pending != n || len(page.Result.Hits) != 0 {
		t.Errorf("JSON twin behind a long queue: pending %d, %d hits; want %d, 0", page.Result.Pending, len(page.Result.Hits), n)
	}
	if err := w.Close(); err != nil { // folds what it queued
		t.Fatal(err)
	}
	exact("after the writer closed")
}
