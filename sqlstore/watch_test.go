package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// eventually waits for cond, failing after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A commit made through the store wakes its own feeds at once, without
// waiting for the data_version poll (set to an hour here).
func TestFeedSameStoreWakesAtOnce(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "s.db"), sqlstore.WithFeedPoll(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan store.Batch[store.Message])
	go func() {
		for b, err := range st.Feed().Messages(fctx, store.MessageFeed{ID: "c"}) {
			if err != nil {
				close(got)
				return
			}
			got <- b
		}
	}()
	eventually(t, "the feed opens", func() bool { open, _ := sqlstore.FeedState(st); return open == 1 })
	for i := range 3 {
		if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage("m")); err != nil {
			t.Fatal(err)
		}
		select {
		case b, ok := <-got:
			if !ok || len(b.Items) != 1 || b.Items[0].Seq != int64(i) {
				t.Fatalf("append %d: got %+v (open %v)", i, b, ok)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("append %d not delivered: the store's own commit did not wake its feed", i)
		}
	}
}

// The data_version poller runs only while a feed is open, one per store
// whatever the number of feeds.
func TestFeedPollsOnlyWhileWatched(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if open, polling := sqlstore.FeedState(st); open != 0 || polling != 0 {
		t.Fatalf("before any feed: %d open, %d polling", open, polling)
	}
	fctx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 2)
	for range 2 {
		go func() {
			var err error
			for _, err = range st.Feed().Messages(fctx, store.MessageFeed{ID: "c"}) {
			}
			ended <- err
		}()
	}
	eventually(t, "two feeds, one poller", func() bool {
		open, polling := sqlstore.FeedState(st)
		return open == 2 && polling == 1
	})
	cancel()
	for range 2 {
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("feed ended with %v", err)
		}
	}
	eventually(t, "the poller stops after the last feed", func() bool {
		open, polling := sqlstore.FeedState(st)
		return open == 0 && polling == 0
	})
}

func TestFeedPollOptionIsValidated(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Millisecond} {
		_, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlstore.WithFeedPoll(d))
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("WithFeedPoll(%v): %v, want ErrInvalidInput", d, err)
		}
	}
}

// A store built with OpenDB polls on one of the caller's connections while
// a feed is open, and gives it back after.
func TestFeedOpenDB(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := sqlstore.OpenDB(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	other, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		for b, err := range st.Feed().Messages(fctx, store.MessageFeed{ID: "c"}) {
			if err == nil && (len(b.Items) != 1 || b.Items[0].Text() != "x") {
				err = errors.New("unexpected batch")
			}
			got <- err
			return
		}
	}()
	eventually(t, "the feed polls", func() bool {
		open, polling := sqlstore.FeedState(st)
		return open == 1 && polling == 1
	})
	// Another store's commit reaches the feed by the poll.
	if _, err := other.Conversations().AppendMessages(ctx, "c", store.UserMessage("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another store's commit did not reach the feed")
	}
	eventually(t, "the poller gives its connection back", func() bool {
		_, polling := sqlstore.FeedState(st)
		return polling == 0 && db.Stats().InUse <= 1 // the writer's connection
	})
}
