package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchTenantCounts measures the admin views of a tenant handle against
// the store's own (store-wide) ones on a store of five tenants (the
// default and four others) with the same rows each: conversations with
// messages, governed sessions, runtime sessions with an upload and agent
// sessions with events. Counts (every facet) and Totals alternate between
// the store and one tenant's handle in one loop; it reports ns per call
// of each side and their ratio (tenant/store). The tenant's queries name
// the tenant, so they read a fifth of the rows where an index begins with
// the tenant and scan the same tables where none does.
func BenchTenantCounts(b *testing.B, h Harness, o BenchOptions, perTenant int) {
	e := benchEnv{h, o}
	st := e.open(b)
	defer closeBench(b, st)
	tr, ok := st.(store.Tenanter)
	if !ok {
		b.Fatalf("%T does not implement store.Tenanter", st)
	}
	ctx := context.Background()
	type scope struct {
		name string
		conv store.Conversations
		gov  store.Governance
		rt   store.Runtime
		as   store.AgentSessions
	}
	scopes := []scope{{"default", st.Conversations(), st.Governance(), st.Runtime(), st.AgentSessions()}}
	var ts store.TenantStore
	for i := range 4 {
		t, err := tr.Tenant(fmt.Sprint("bench-", i))
		if err != nil {
			b.Fatal(err)
		}
		ts = t
		scopes = append(scopes, scope{t.Tenant(), t.Conversations(), t.Governance(), t.Runtime(), t.AgentSessions()})
	}
	for _, s := range scopes {
		for i := range perTenant {
			id := fmt.Sprintf("%s-%d", s.name, i)
			c := store.NewConversation("conv-" + id)
			c.Messages = []store.Message{store.UserMessage("q"), store.AssistantMessage("a")}
			c.TotalCost = 0.01
			if _, err := s.conv.Save(ctx, c); err != nil {
				b.Fatal(err)
			}
			if _, err := s.gov.Create(ctx, store.CreateRequest{AgentID: "agent", AuthorizedTools: []string{"t"}, CallBudget: 5, TimeLimit: time.Hour}); err != nil {
				b.Fatal(err)
			}
			if i%4 == 0 {
				if _, err := s.rt.Insert(ctx, store.NewRuntimeSession{ID: "rt-" + id, AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatModeChat}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "rt-" + id, RefID: "r", WorkspacePath: "w", Content: []byte(id)}); err != nil {
					b.Fatal(err)
				}
			}
			key := store.SessionKey{App: "app", User: "u", Session: id}
			if _, err := s.as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: benchEvent(0)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	whole, ok := st.(interface {
		store.Counter
		store.Totaler
	})
	if !ok {
		b.Fatalf("%T does not implement store.Counter and store.Totaler", st)
	}
	run := func(b *testing.B, calls [2]func() error) {
		var spent [2]time.Duration
		n := 0
		for b.Loop() {
			for j := range 2 {
				side := (j + n) % 2
				start := time.Now()
				err := calls[side]()
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
		st, tn := float64(spent[0].Nanoseconds())/float64(n), float64(spent[1].Nanoseconds())/float64(n)
		b.ReportMetric(st, "ns/call-store")
		b.ReportMetric(tn, "ns/call-tenant")
		b.ReportMetric(tn/st, "tenant/store")
	}
	b.Run("Counts", func(b *testing.B) {
		run(b, [2]func() error{
			func() error { _, err := whole.Counts(ctx); return err },
			func() error { _, err := ts.Counts(ctx); return err },
		})
	})
	since := time.Now().Add(-14 * 24 * time.Hour)
	b.Run("Totals", func(b *testing.B) {
		run(b, [2]func() error{
			func() error { _, err := whole.Totals(ctx, store.TotalsRequest{Since: since}); return err },
			func() error { _, err := ts.Totals(ctx, store.TotalsRequest{Since: since}); return err },
		})
	})
}
