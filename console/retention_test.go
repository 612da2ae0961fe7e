package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestRetentionPage: the page shows the stored policies, the holds, the
// last sweeps and what the next sweep would remove, and changes nothing.
func TestRetentionPage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "r.db"), sqlstore.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := st.Conversations().Save(ctx, store.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	r := st.Retention()
	if err := r.SetPolicy(ctx, store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := r.Hold(ctx, store.SessionRef{Facet: store.HoldConversations, ID: "c3"}, "kept for review"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := r.Sweep(ctx, store.SweepOptions{Policies: []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: 3 * time.Hour}}}); err != nil {
		t.Fatal(err)
	}
	h, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	body := get("/retention")
	for _, want := range []string{`id="policies"`, "conversations_idle", "kept for review", `id="sweeps"`, `id="next-sweep"`, "no policy set"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	// What a policy removes reads with its setting, not the store's
	// parameter ("idle for longer than max_age").
	if !strings.Contains(body, "conversations idle for longer than 1 h,") || strings.Contains(body, "max_age") {
		t.Errorf("the policies' descriptions: %s", body[strings.Index(body, `id="policies"`):][:1500])
	}
	// The age reads as people write it, and as whole milliseconds in
	// the JSON twin (max_age_ms), never Go's nanoseconds.
	if !strings.Contains(body, "after 1 h<") {
		t.Errorf("the page does not say \"after 1 h\": %s", body)
	}
	raw := get("/retention?format=json")
	if !strings.Contains(raw, `"max_age_ms": 3600000`) || strings.Contains(raw, `"max_age":`) {
		t.Errorf("the JSON twin's policy age: %s", raw)
	}
	var p retentionPage
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	k, _ := p.Next.Kind(store.PolicyConversationsIdle)
	if len(p.Policies) != 1 || len(p.Holds) != 1 || len(p.Sweeps) != 1 || !p.Next.DryRun || k.Sessions != 2 || k.Held != 1 {
		t.Fatalf("page data %+v", p)
	}
	if ok, _ := st.Conversations().Exists(ctx, "c1"); !ok {
		t.Fatal("the page's dry run removed a conversation")
	}
}
