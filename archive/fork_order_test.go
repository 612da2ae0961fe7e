package archive_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/store"
)

// TestForksBeforeTheirParentsKeepTheirLineage: a fork whose id sorts
// before its parent's (and a fork of that fork sorting before both) comes
// before its parent in the document, and imports as a fork all the same,
// with its fork point and its history tree: agent sessions and
// conversations, on both backends.
func TestForksBeforeTheirParentsKeepTheirLineage(t *testing.T) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			src := b.open(t)
			as, conv := src.AgentSessions(), src.Conversations()
			parent := store.SessionKey{App: "app", User: "u", Session: "zz-parent"}
			_, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: parent})
			must(t, err)
			for _, id := range []string{"e1", "e2", "e3"} {
				_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: parent, Event: store.AgentEvent{ID: id, Data: json.RawMessage(`{"text":"` + id + `"}`)}})
				must(t, err)
			}
			_, err = as.Fork(ctx, store.ForkRequest{Key: parent, At: 2, Session: "mm-fork"})
			must(t, err)
			_, err = as.Fork(ctx, store.ForkRequest{Key: store.SessionKey{App: "app", User: "u", Session: "mm-fork"}, At: 1, Session: "aa-fork"})
			must(t, err)
			c := store.NewConversation("zz-parent")
			c.Messages = []store.Message{store.UserMessage("a"), store.AssistantMessage("b"), store.UserMessage("c")}
			_, err = conv.Save(ctx, c)
			must(t, err)
			_, err = conv.Fork(ctx, store.ConversationForkRequest{ID: "zz-parent", At: 1, NewID: "mm-fork"})
			must(t, err)
			_, err = conv.Fork(ctx, store.ConversationForkRequest{ID: "mm-fork", At: 0, NewID: "aa-fork"})
			must(t, err)

			doc, _ := export(t, src, archive.ExportOptions{})
			dst := b.open(t)
			if _, err := archive.Import(ctx, dst, bytes.NewReader(doc), archive.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				id string
				at int64
			}{{"mm-fork", 2}, {"aa-fork", 1}} {
				k := store.SessionKey{App: "app", User: "u", Session: w.id}
				want, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: k})
				must(t, err)
				s, err := dst.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true})
				must(t, err)
				if want.ForkedFrom == nil || s.ForkedFrom == nil || *s.ForkedFrom != *want.ForkedFrom || int64(len(s.Events)) != w.at {
					t.Errorf("agent session %s imported with lineage %+v and %d events, want %+v and %d", w.id, s.ForkedFrom, len(s.Events), want.ForkedFrom, w.at)
				}
				wantC, err := conv.Load(ctx, w.id)
				must(t, err)
				got, err := dst.Conversations().Load(ctx, w.id)
				must(t, err)
				if wantC.ForkedFrom == nil || got.ForkedFrom == nil || *got.ForkedFrom != *wantC.ForkedFrom || int64(len(got.Messages)) != w.at {
					t.Errorf("conversation %s imported with lineage %+v and %d messages, want %+v and %d", w.id, got.ForkedFrom, len(got.Messages), wantC.ForkedFrom, w.at)
				}
			}
			nodes, err := dst.Conversations().History(ctx, "aa-fork")
			must(t, err)
			if len(nodes) != 3 {
				t.Errorf("history of the imported aa-fork: %+v, want zz-parent, mm-fork, aa-fork", nodes)
			}
			lineage, err := dst.AgentSessions().History(ctx, store.SessionKey{App: "app", User: "u", Session: "aa-fork"})
			must(t, err)
			if len(lineage) != 3 {
				t.Errorf("history of the imported agent session aa-fork: %+v, want three nodes", lineage)
			}
			// And the export of the import is the document again.
			if again, _ := export(t, dst, archive.ExportOptions{}); !bytes.Equal(again, doc) {
				t.Fatalf("the export of the import differs:\n%s", firstDiff(doc, again))
			}
		})
	}
}
