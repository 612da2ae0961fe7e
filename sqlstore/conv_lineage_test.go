package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// TestConversationLineageQueriesUseIndexes checks with EXPLAIN QUERY PLAN
// that the reads that walk a conversation's lineage and the lookups of a
// rewrite search an index: their cost depends on the rows they return,
// not on the length of the histories.
func TestConversationLineageQueriesUseIndexes(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	for i := range 10 {
		id := "p" + strconv.Itoa(i)
		conv := store.NewConversation(id)
		for range 30 {
			conv.Messages = append(conv.Messages, store.UserMessage("m"))
		}
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: id, At: 20, NewID: "f" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: id, To: 10}); err != nil {
			t.Fatal(err)
		}
	}
	db := convRawDB(t, path)
	s := sqlcore.Statements
	queries := map[string]convPlanQuery{
		"lineage row":         {s["convLine"], []any{"x", ""}, "conversations", false},
		"span":                {s["msgSpan"], []any{"x", 0, 10, 100}, "conversation_messages", false},
		"span newest first":   {s["msgSpanDesc"], []any{"x", 0, 10, 100}, "conversation_messages", false},
		"latest summary":      {s["msgSummary"], []any{"x", 0, 10}, "conversation_messages_compactions", false},
		"retired span":        {s["heldSpan"], []any{"x", 0, 10, 100}, "conversation_retired_messages", false},
		"retired span desc":   {s["heldSpanDesc"], []any{"x", 0, 10, 100}, "conversation_retired_messages", false},
		"retired summary":     {s["heldSummary"], []any{"x", 0, 10}, "conversation_retired_messages", false},
		"repoint":             {s["convRepoint"], []any{"h", "x", 0}, "conversations_lineage", false},
		"repoint retired":     {s["retiredRepoint"], []any{"h", "x", 0, "h"}, "conversation_retired_lineage", false},
		"superseded runs":     {s["retiredRuns"], []any{"x"}, "conversation_retired_superseded", false},
		"runs of":             {s["retiredOf"], []any{"x"}, "conversation_retired_superseded", false},
		"children":            {s["convChildren"], []any{"x"}, "conversations_lineage", true},
		"retired children":    {s["retiredKids"], []any{"x"}, "conversation_retired_lineage", true},
		"retire tail":         {s["msgRetire"], []any{"h", "x", 5}, "conversation_messages", false},
		"delete tail":         {s["msgDeleteTail"], []any{"x", 5}, "conversation_messages", false},
		"compactions":         {s["msgCompactions"], []any{"x"}, "conversation_messages_compactions", false},
		"retired compactions": {s["heldCompactions"], []any{"x"}, "conversation_retired_messages", false},
	}
	for _, analyze := range []bool{false, true} {
		if analyze {
			if _, err := db.Exec("ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		convCheckPlans(t, db, queries)
		// The readers check is two EXISTS probes over a constant row.
		plan := convQueryPlan(t, db, s["convReaders"], "x", 0, "x", 0)
		for _, want := range []string{"conversations USING INDEX conversations_lineage", "conversation_retired USING INDEX conversation_retired_lineage"} {
			if !strings.Contains(plan, want) {
				t.Errorf("readers check does not search %s:\n%s", want, plan)
			}
		}
	}
}

// TestConversationRetiredRowsGoWithTheLastReader counts the retired
// histories: a deleted conversation's messages stay while forks read
// them and go with the last of them, with its superseded runs.
func TestConversationRetiredRowsGoWithTheLastReader(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	conv := store.NewConversation("p")
	for range 10 {
		conv.Messages = append(conv.Messages, store.UserMessage("m"))
	}
	if _, err := c.Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"f", "g"} {
		if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "p", At: 6, NewID: f}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: "f", To: 2}); err != nil {
		t.Fatal(err)
	}
	db := convRawDB(t, path)
	counts := func() (holders, msgs, live int) {
		t.Helper()
		for q, dst := range map[string]*int{
			"SELECT count(*) FROM conversation_retired":          &holders,
			"SELECT count(*) FROM conversation_retired_messages": &msgs,
			"SELECT count(*) FROM conversation_messages":         &live,
		} {
			if err := db.QueryRow(q).Scan(dst); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	steps := []struct {
		del                string
		holders, msgs, own int
	}{
		// f's superseded run (positions 3..6, all inherited) holds none.
		{"", 1, 0, 10},
		{"p", 2, 10, 0},
		{"f", 1, 10, 0},
		{"g", 0, 0, 0},
	}
	for _, s := range steps {
		if s.del != "" {
			if err := c.Delete(ctx, s.del); err != nil {
				t.Fatal(err)
			}
		}
		if h, m, l := counts(); h != s.holders || m != s.msgs || l != s.own {
			t.Fatalf("after deleting %q: %d retired histories with %d messages, %d live messages; want %d, %d, %d",
				s.del, h, m, l, s.holders, s.msgs, s.own)
		}
	}
}
