package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestConversationLineageRoundTrips: a fork of a conversation exports its
// fork point and its compaction records, and imports as a fork (its
// History shows the lineage) with the same messages, also a fork whose
// id sorts before its parent's; a version-4 document may carry neither.
func TestConversationLineageRoundTrips(t *testing.T) {
	ctx := context.Background()
	src, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := src.Conversations()
	p := store.NewConversation("m-parent")
	for _, s := range []string{"a", "b", "c", "d"} {
		p.Messages = append(p.Messages, store.UserMessage(s))
	}
	if _, err := c.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"z-after", "a-before"} {
		if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "m-parent", At: 2, NewID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, store.AssistantMessage("own "+id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Compact(ctx, store.ConversationCompactRequest{ID: "z-after", Range: store.CompactionRange{From: 0, To: 2},
		Summary: store.AssistantMessage("summary")}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := archive.Export(ctx, src, &buf, archive.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"forked_from": {`)) || !bytes.Contains(buf.Bytes(), []byte(`"compaction": {`)) {
		t.Fatalf("export has no fork point or compaction range:\n%s", buf.Bytes())
	}
	dst, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "dst.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := archive.Import(ctx, dst, bytes.NewReader(buf.Bytes()), archive.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m-parent", "z-after", "a-before"} {
		want, err := c.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.Conversations().Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) != len(want.Messages) || got.MessageCount != want.MessageCount {
			t.Fatalf("%s: %d messages imported, want %d", id, len(got.Messages), len(want.Messages))
		}
		for i := range want.Messages {
			g, w := got.Messages[i], want.Messages[i]
			if g.Seq != w.Seq || messageText(g) != messageText(w) || (g.Compaction == nil) != (w.Compaction == nil) ||
				(g.Compaction != nil && *g.Compaction != *w.Compaction) {
				t.Fatalf("%s message %d: %+v, want %+v", id, i, g, w)
			}
		}
	}
	nodes, err := dst.Conversations().History(ctx, "z-after")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[2].ID != "z-after" || nodes[2].Parent != "m-parent" || nodes[2].ForkNext != 3 {
		t.Fatalf("z-after imported outside the lineage: %+v", nodes)
	}
	if nodes, _ := dst.Conversations().History(ctx, "a-before"); len(nodes) != 3 || nodes[1].ID != "a-before" || nodes[1].Parent != "m-parent" {
		t.Fatalf("a-before (listed before its parent) imported with lineage %+v", nodes)
	}
	old := bytes.Replace(buf.Bytes(), []byte(fmt.Sprintf(`"version": %d`, archive.Version)), []byte(`"version": 4`), 1)
	other, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := archive.Import(ctx, other, bytes.NewReader(old), archive.ImportOptions{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("version-4 document with a fork point: %v", err)
	}
}

func messageText(m store.Message) string {
	s := m.Role + ":"
	for _, b := range m.Content {
		s += b.Text
	}
	return s
}
