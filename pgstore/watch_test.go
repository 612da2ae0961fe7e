package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// listenFeedChannel LISTENs on the feed channel of loc's schema on a
// connection of its own.
func listenFeedChannel(t *testing.T, loc string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var channel string
	if err := conn.QueryRow(ctx, "SELECT sessionstore_feed_channel(current_schema())").Scan(&channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// nextNotification returns the payload of the next notification on conn.
func nextNotification(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return n.Payload
}

// Writers NOTIFY the feed channel only while a feed listens: a NOTIFY
// makes every committing transaction of the database take one lock in
// turn, which nobody should pay for while nobody listens.
func TestFeedNotifiesOnlyWhileListened(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st := open(t, loc)
	writer := open(t, loc)
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	conn := listenFeedChannel(t, loc)
	marker := func() {
		t.Helper()
		if _, err := adminPool(t).Exec(ctx, "SELECT pg_notify($1, 'marker')", feedChannel(t, loc)); err != nil {
			t.Fatal(err)
		}
	}

	// Nobody watches: an append sends nothing (the marker, committed
	// after it, is the first notification).
	if _, err := writer.Conversations().AppendMessages(ctx, "c", store.UserMessage("a")); err != nil {
		t.Fatal(err)
	}
	marker()
	if p := nextNotification(t, conn); p != "marker" {
		t.Fatalf("notification %q while nobody watched; want only the marker", p)
	}

	// A feed opens: its listener opens the gate, and the next append
	// notifies.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	delivered := make(chan int, 8)
	go func() {
		for b, err := range st.Feed().Messages(fctx, store.MessageFeed{ID: "c"}) {
			if err != nil {
				return
			}
			delivered <- len(b.Items)
		}
	}()
	<-delivered // the history
	gateOpen := func() bool {
		var open bool
		err := adminPool(t).QueryRow(ctx, "SELECT last_value > (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM "+
			pgx.Identifier{schemaOf(t, loc), "sessionstore_feed_gate"}.Sanitize()).Scan(&open)
		return err == nil && open
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gateOpen() {
		if time.Now().After(deadline) {
			t.Fatal("the listening store did not open the gate")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, write := range []func() error{
		func() error {
			_, err := writer.Conversations().AppendMessages(ctx, "c", store.UserMessage("b"))
			return err
		},
		func() error { _, err := writer.Conversations().PopMessage(ctx, "c"); return err },
		func() error {
			_, err := writer.Governance().Create(ctx, store.CreateRequest{ID: "g", AgentID: "a", CallBudget: 1, TimeLimit: time.Hour})
			if err != nil {
				return err
			}
			_, err = writer.Governance().Close(ctx, "g")
			return err
		},
	} {
		if err := write(); err != nil {
			t.Fatal(err)
		}
		if p := nextNotification(t, conn); p != "" {
			t.Fatalf("notification %q, want the feed's (empty payload)", p)
		}
	}
}

func feedChannel(t *testing.T, loc string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var channel string
	if err := conn.QueryRow(context.Background(), "SELECT sessionstore_feed_channel(current_schema())").Scan(&channel); err != nil {
		t.Fatal(err)
	}
	return channel
}

// The epochs are maintained by the database, whatever path writes: a pop
// written behind the store's back renews the messages epoch too.
func TestFeedEpochRenewedBehindTheStore(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st := open(t, loc)
	c := store.NewConversation("c")
	c.Messages = []store.Message{store.UserMessage("a"), store.UserMessage("b")}
	if _, err := st.Conversations().Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	// A session of its own on the store's schema, as a maintenance
	// script would open it.
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	epoch := func() int64 {
		var e int64
		if err := conn.QueryRow(ctx, "SELECT messages_epoch FROM conversations WHERE id = 'c'").Scan(&e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e0 := epoch()
	if e0 == 0 {
		t.Fatal("a new conversation has epoch 0")
	}
	if _, err := conn.Exec(ctx, "DELETE FROM conversation_messages WHERE session_id = 'c' AND seq = 0"); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e != e0 {
		t.Fatalf("removing an older message changed the epoch: %d -> %d", e0, e)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM conversation_messages WHERE session_id = 'c' AND seq = 1"); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e == e0 {
		t.Fatal("removing the last message kept the epoch")
	}
}

// The feed's triggers do not depend on the schema's name: after a rename,
// the store (opened on the new name) pops, saves and spends as before, and
// its feeds work. A session on another search_path can still write the
// governed sessions (the notify trigger finds its gate through the table's
// schema).
func TestFeedSurvivesSchemaRename(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	oldName := schemaOf(t, loc)
	newName := oldName + "_renamed"
	st := open(t, loc)
	c := store.NewConversation("c")
	c.Messages = []store.Message{store.UserMessage("a"), store.UserMessage("b")}
	if _, err := st.Conversations().Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "g", AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 5, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	admin := adminPool(t)
	if _, err := admin.Exec(ctx, "ALTER SCHEMA "+oldName+" RENAME TO "+newName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "ALTER SCHEMA "+newName+" RENAME TO "+oldName) })
	// Another search_path: the writer names the table.
	if _, err := admin.Exec(ctx, "UPDATE "+newName+".governed_sessions SET declared_intent = 'x' WHERE id = 'g'"); err != nil {
		t.Fatalf("write from another search_path: %v", err)
	}
	renamed := open(t, withSearchPath(t, serverURL(t), newName))
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	seen := 0
	for b, err := range renamed.Feed().Messages(fctx, store.MessageFeed{ID: "c"}) {
		if err != nil {
			var reset *store.FeedResetError
			if seen == 2 && errors.As(err, &reset) {
				break // the pop below
			}
			t.Fatalf("feed after %d messages: %v", seen, err)
		}
		seen += len(b.Items)
		if seen == 2 {
			if _, err := renamed.Conversations().PopMessage(ctx, "c"); err != nil {
				t.Fatalf("PopMessage after the rename: %v", err)
			}
		}
	}
	if _, err := renamed.Governance().Use(ctx, store.UseRequest{SessionID: "g", Tools: []string{"t"}}); err != nil {
		t.Fatalf("Use after the rename: %v", err)
	}
	if err := renamed.Conversations().Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete after the rename: %v", err)
	}
}

// Migration 8 takes the fixed search_path off the feed's trigger
// functions, and its down step puts it back.
func TestFeedMigrationDownUp(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	p, db, pool, err := pgstore.NewMigrationProvider(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	defer db.Close()
	pinned := func() []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT proname FROM pg_proc
			WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'sessionstore%' AND proconfig IS NOT NULL
			ORDER BY proname`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	if _, err := p.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if got := pinned(); len(got) != 4 {
		t.Fatalf("at version 7, functions with a fixed search_path: %v, want the 4 trigger functions", got)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if got := pinned(); len(got) != 0 {
		t.Fatalf("at version 8, functions with a fixed search_path: %v", got)
	}
	if _, err := p.DownTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if got := pinned(); len(got) != 4 {
		t.Fatalf("down to 7, functions with a fixed search_path: %v", got)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	st := open(t, loc)
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
}
