package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchTenants measures what a tenant handle costs on the hot paths: an
// agent-session append (with a session-state delta), a governed Use and a
// read of a session with its last 100 events, each alternating between the store
// itself (the default tenant) and a tenant handle in the same loop, so
// that both sides see the same machine load. Which side goes first
// alternates too: the second call of a pair measured about 1.2x the first
// on SQLite whichever side it was. It reports ns per call of each side
// and their ratio (tenant/default). The conversation sub-benchmarks do the
// same for a message append and a read of a conversation's last 100
// messages (conversation ids are global, so each side has its own id).
func BenchTenants(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	st := e.open(b)
	defer closeBench(b, st)
	tr, ok := st.(store.Tenanter)
	if !ok {
		b.Fatalf("%T does not implement store.Tenanter", st)
	}
	ts, err := tr.Tenant("bench-tenant")
	if err != nil {
		b.Fatal(err)
	}
	sides := []store.AgentSessions{st.AgentSessions(), ts.AgentSessions()}
	key := store.SessionKey{App: "bench", User: "u", Session: "s"}
	ctx := context.Background()
	for _, as := range sides {
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, spent [2]time.Duration, n int, unit string) {
		def := float64(spent[0].Nanoseconds()) / float64(n)
		ten := float64(spent[1].Nanoseconds()) / float64(n)
		b.ReportMetric(def, "ns/"+unit+"-default")
		b.ReportMetric(ten, "ns/"+unit+"-tenant")
		b.ReportMetric(ten/def, "tenant/default")
	}
	b.Run("AppendEvent", func(b *testing.B) {
		var spent [2]time.Duration
		next := [2]int{}
		n := 0
		for b.Loop() {
			for j := range sides {
				side := (j + n) % 2
				as := sides[side]
				i := next[side]
				next[side]++
				start := time.Now()
				res, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: benchEvent(i), Delta: benchDelta(i)})
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if res.Event.Seq != int64(i+1) {
					b.Fatalf("append landed at %d, want %d", res.Event.Seq, i+1)
				}
			}
			n++
		}
		report(b, spent, n, "append")
	})
	b.Run("GovernedUse", func(b *testing.B) {
		// A governed Use (one tool, audited) on a session of each side,
		// alternating as above: the tenant's statement names the tenant
		// (and on PostgreSQL runs in a transaction that sets it).
		govs := []store.Governance{st.Governance(), ts.Governance()}
		ids := [2]string{}
		for i, g := range govs {
			s, err := g.Create(ctx, store.CreateRequest{AgentID: "bench-agent", AuthorizedTools: []string{"t"},
				CallBudget: 1 << 40, TimeLimit: 24 * time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = s.ID
		}
		var spent [2]time.Duration
		n := 0
		for b.Loop() {
			for j := range govs {
				side := (j + n) % 2
				start := time.Now()
				s, err := govs[side].Use(ctx, store.UseRequest{SessionID: ids[side], Tools: []string{"t"}})
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if s.CallsMade != int64(n+1) {
					b.Fatalf("use %d counted %d calls", n+1, s.CallsMade)
				}
			}
			n++
		}
		report(b, spent, n, "use")
	})
	b.Run("GetSession/recent=100", func(b *testing.B) {
		for _, as := range sides {
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
			if err != nil {
				b.Fatal(err)
			}
			for i := s.EventCount; i < 100; i++ {
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: benchEvent(int(i))}); err != nil {
					b.Fatal(err)
				}
			}
		}
		var spent [2]time.Duration
		n := 0
		for b.Loop() {
			for j := range sides {
				side := (j + n) % 2
				as := sides[side]
				start := time.Now()
				s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, Recent: 100})
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Events) != 100 {
					b.Fatalf("%d events, want 100", len(s.Events))
				}
			}
			n++
		}
		report(b, spent, n, "get")
	})
	convs := []store.Conversations{st.Conversations(), ts.Conversations()}
	convIDs := []string{"bench-conv-default", "bench-conv-tenant"}
	for i, c := range convs {
		if _, err := c.Save(ctx, store.NewConversation(convIDs[i])); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ConversationAppend", func(b *testing.B) {
		var spent [2]time.Duration
		n := 0
		for b.Loop() {
			for j := range convs {
				side := (j + n) % 2
				start := time.Now()
				_, err := convs[side].AppendMessages(ctx, convIDs[side], store.UserMessage("a benchmark message of some length"))
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
		report(b, spent, n, "append")
	})
	b.Run("ConversationMessages/last=100", func(b *testing.B) {
		for i, c := range convs {
			cnt, err := c.MessageCount(ctx, convIDs[i])
			if err != nil {
				b.Fatal(err)
			}
			for ; cnt < 100; cnt++ {
				if _, err := c.AppendMessages(ctx, convIDs[i], store.UserMessage("a benchmark message of some length")); err != nil {
					b.Fatal(err)
				}
			}
		}
		var spent [2]time.Duration
		n := 0
		for b.Loop() {
			for j := range convs {
				side := (j + n) % 2
				start := time.Now()
				msgs, err := convs[side].LastMessages(ctx, convIDs[side], 100)
				spent[side] += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if len(msgs) != 100 {
					b.Fatalf("%d messages, want 100", len(msgs))
				}
			}
			n++
		}
		report(b, spent, n, "read")
	})
}
