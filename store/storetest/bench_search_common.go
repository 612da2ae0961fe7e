package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BuildCommonTermCorpus writes n items of ~1 KiB to st, for the
// benchmarks of a search of a common term (BenchSearchCommonTerm): runner
// replies of words of a small vocabulary and numbers, one in every 50 a
// message of one of 10 conversations, the others events of 40 agent
// sessions (s-00 to s-39, users u0 to u3 of app "bench") at times a second
// apart but for a random shift of up to an hour either way (so that the
// newest items are not the last ones indexed). "session" is in most
// items, "xylophone" in one of every 1,000. The caller folds them (a
// search does).
func BuildCommonTermCorpus(ctx context.Context, st store.Store, n int) error {
	rng := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields(`the a model reply about task at hand we looked into broker queue partition consumer
		lag offset retry budget session agent tool call search index write fold commit page cache
		durable crash restart process file lock writer reader snapshot export import tenant key
		shred rotate policy sweep retention history fork rewind turn event state delta usage cost`)
	reply := func() string {
		var sb strings.Builder
		for sb.Len() < 1000 {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(9) == 0 {
				fmt.Fprintf(&sb, " %d", rng.IntN(100000))
			}
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	as := st.AgentSessions()
	keys := make([]store.SessionKey, 40)
	for i := range keys {
		keys[i] = store.SessionKey{App: "bench", User: "u" + strconv.Itoa(i%4), Session: fmt.Sprintf("s-%02d", i)}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: keys[i]}); err != nil {
			return err
		}
	}
	for c := range 10 {
		if _, err := st.Conversations().Save(ctx, store.NewConversation(fmt.Sprintf("conv-%02d", c))); err != nil {
			return err
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		text := reply()
		if i%1000 == 7 {
			text += " xylophone"
		}
		if i%50 == 3 {
			msg := store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{store.TextBlock(text)}}
			if _, err := st.Conversations().AppendMessages(ctx, fmt.Sprintf("conv-%02d", i%10), msg); err != nil {
				return err
			}
			continue
		}
		ts := t0.Add(time.Duration(i)*time.Second + time.Duration(rng.IntN(7200)-3600)*time.Second)
		data := fmt.Sprintf(`{"author":"assistant","content":{"role":"model","parts":[{"text":%s}]}}`, strconv.Quote(text))
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: keys[rng.IntN(len(keys))],
			Event: store.AgentEvent{ID: "e" + strconv.Itoa(i), Timestamp: ts, Data: []byte(data)}}); err != nil {
			return err
		}
	}
	return nil
}

// BenchSearchCommonTerm runs, on a corpus of BuildCommonTermCorpus, the
// first page (Limit 20) of searches, ranked and newest first, each a
// sub-benchmark: "common" ("session", in most items), "rare"
// ("xylophone"), "filtered" ("session" in one session of 40: the filter
// rejects most of the index's candidates), "messages" ("session" in
// messages only: the kind filter rejects 98%) and "absent"
// ("sessionagent", in no item, though most of its trigrams are in most).
func BenchSearchCommonTerm(b *testing.B, s store.Searcher) {
	ctx := context.Background()
	queries := []struct {
		name string
		q    store.SearchQuery
		none bool // the search has no hit
	}{
		{"common", store.SearchQuery{Query: "session"}, false},
		{"rare", store.SearchQuery{Query: "xylophone"}, false},
		{"filtered", store.SearchQuery{Query: "session", Session: "s-07"}, false},
		{"messages", store.SearchQuery{Query: "session", Kinds: []store.SearchKind{store.SearchMessage}}, false},
		{"absent", store.SearchQuery{Query: "sessionagent"}, true},
	}
	for _, qc := range queries {
		for _, o := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
			b.Run(qc.name+"/"+string(o), func(b *testing.B) {
				q := qc.q
				q.Limit, q.Order = 20, o
				hits := 0
				for b.Loop() {
					r, err := s.Search(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					hits = len(r.Hits)
				}
				if (hits == 0) != qc.none {
					b.Fatalf("%d hits of %+v", hits, q)
				}
			})
		}
	}
}
