package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestSearchPendingNote: the console's store is read-only and cannot fold
// the search queue; its search page leaves out a message deleted since
// the last fold, and says in words that recent changes are not indexed
// yet (the JSON twin's result.pending); once the writer closed (folding
// its queue) the page finds the new message and says nothing of it.
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
	_, body := get(t, srv, prefix+"/search?q=pendtoken")
	for _, want := range []string{`id="search-pending"`, "1 recent change is not indexed yet", "sessionctl reindex", "no matches"} {
		if !strings.Contains(body, want) {
			t.Errorf("search page before the fold lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<mark>pendtoken</mark>") {
		t.Errorf("search page before the fold shows a hit (the deleted message's old text):\n%s", body)
	}
	var page struct {
		Result store.SearchResult `json:"result"`
	}
	getJSON(t, srv, "/search?q=pendtoken&format=json", &page)
	if page.Result.Pending != 1 || len(page.Result.Hits) != 0 {
		t.Errorf("JSON twin before the fold: pending %d, %d hits; want 1, 0", page.Result.Pending, len(page.Result.Hits))
	}
	if err := w.Close(); err != nil { // folds what it queued
		t.Fatal(err)
	}
	_, body = get(t, srv, prefix+"/search?q=pendtoken")
	if strings.Contains(body, `id="search-pending"`) || strings.Count(body, "<mark>pendtoken</mark>") != 1 || !strings.Contains(body, "new") {
		t.Errorf("search page after the writer closed: want the new message only, no note:\n%s", body)
	}
}
