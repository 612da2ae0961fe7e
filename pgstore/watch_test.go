package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	table := pgx.Identifier{schemaOf(t, loc), "conversations"}.Sanitize()
	msgs := pgx.Identifier{schemaOf(t, loc), "conversation_messages"}.Sanitize()
	epoch := func() int64 {
		var e int64
		if err := adminPool(t).QueryRow(ctx, "SELECT messages_epoch FROM "+table+" WHERE id = 'c'").Scan(&e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e0 := epoch()
	if e0 == 0 {
		t.Fatal("a new conversation has epoch 0")
	}
	if _, err := adminPool(t).Exec(ctx, "DELETE FROM "+msgs+" WHERE session_id = 'c' AND seq = 0"); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e != e0 {
		t.Fatalf("removing an older message changed the epoch: %d -> %d", e0, e)
	}
	if _, err := adminPool(t).Exec(ctx, "DELETE FROM "+msgs+" WHERE session_id = 'c' AND seq = 1"); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e == e0 {
		t.Fatal("removing the last message kept the epoch")
	}
}
