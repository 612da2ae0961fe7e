package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// TestJSONTwinsAreTheCLIViews: the JSON twins write a conversation, a
// runtime session, a governed session's spend and its reservations as the
// view package does, which sessionctl's --json prints (issue 38: one
// rendering everywhere), byte for byte with the keys in the view's order.
func TestJSONTwinsAreTheCLIViews(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		st, f, _ := seeded(t, b)
		srv := newServer(t, st, f, console.Options{})

		// member returns the raw JSON of the twin of path at the keys
		// given, compacted (the twins are indented).
		member := func(path string, keys ...string) []byte {
			t.Helper()
			_, body := get(t, srv, prefix+path)
			raw := json.RawMessage(body)
			for _, k := range keys {
				var doc map[string]json.RawMessage
				if err := json.Unmarshal(raw, &doc); err != nil {
					t.Fatalf("GET %s: %v in %s", path, err, truncate(body))
				}
				if raw = doc[k]; raw == nil {
					t.Fatalf("GET %s: no %q in %s", path, k, truncate(body))
				}
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}
		want := func(what string, got []byte, v any) {
			t.Helper()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			if w := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
				t.Errorf("%s:\n got %s\nwant %s", what, got, w)
			}
		}

		info, err := st.Conversations().Info(ctx, f.Conv)
		if err != nil {
			t.Fatal(err)
		}
		want("conversation", member("/conversations/"+url.PathEscape(f.Conv)+"?format=json", "conversation"), view.NewConversation(info))
		convs, err := st.Conversations().List(ctx, store.ConversationFilter{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		want("conversations", member("/conversations?format=json", "conversations"), views(convs.Items, view.NewConversation))

		rs, err := st.Runtime().Get(ctx, f.StaleRuntime)
		if err != nil {
			t.Fatal(err)
		}
		want("runtime session", member("/runtime/"+url.PathEscape(f.StaleRuntime)+"?format=json", "session"), view.NewRuntimeSession(rs))
		rts, err := store.ListRuntimeSessionsPage(ctx, st.Runtime(), store.RuntimeSessionsPageRequest{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		want("runtime sessions", member("/runtime?format=json", "sessions"), views(rts.Items, view.NewRuntimeSession))

		status, err := st.Spend().Status(ctx, f.Governed)
		if err != nil {
			t.Fatal(err)
		}
		sv := view.NewSpend(status)
		gov := "/governed/" + f.Governed + "?format=json"
		want("spend limits", member(gov, "spend", "limits"), sv.Limits)
		want("live reservations", member(gov, "spend", "live_reservations"), sv.Live)
		r, err := st.Spend().Reservation(ctx, f.Governed, f.Reservation)
		if err != nil {
			t.Fatal(err)
		}
		want("reservations", member(gov, "spend", "reservations"), []view.Reservation{view.NewReservation(r)})
	})
}

// views returns the view of each item.
func views[T, V any](items []T, v func(T) V) []V {
	out := make([]V, len(items))
	for i, it := range items {
		out[i] = v(it)
	}
	return out
}
