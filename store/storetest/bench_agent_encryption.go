package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchAgentEncryption measures the cost of encrypting agent sessions
// (issue 29's goals: an event append <= 1.3x plain, a get of 1,000 events
// <= 1.5x) on any backend: a plain and an encrypted store side by side,
// the two calls alternating in every iteration (which goes first flips
// each time), so that the ratio is not the machine's load changing
// between two runs. The events are ~600-byte ADK documents, as in
// sqlstore's BenchmarkEncryption. It reports ns/op of each side and the
// ratio.
func BenchAgentEncryption(b *testing.B, h Harness, o BenchOptions) {
	if h.OpenWith == nil {
		b.Skip("the harness cannot open a store with a keyring")
	}
	ctx := context.Background()
	ring, open := benchEncryptionStores(b, h, o)
	sides := []store.AgentSessions{open(nil).AgentSessions(), open(ring).AgentSessions()}
	text := benchReplyText()
	data, err := json.Marshal(map[string]any{"author": "model", "invocationId": "inv-1",
		"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}})
	if err != nil {
		b.Fatal(err)
	}
	create := func(b *testing.B, key store.SessionKey) {
		for _, as := range sides {
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
				State: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(`0`)}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Append", func(b *testing.B) {
		key := store.SessionKey{App: "bench", User: "u", Session: "append"}
		create(b, key)
		delta := store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(`1`)}}
		benchAlternate(b, func(side int) error {
			_, err := sides[side].AppendEvent(ctx, store.AppendEventRequest{Key: key,
				Event: store.AgentEvent{Data: data}, Delta: delta})
			return err
		})
	})
	b.Run("Get1000Events", func(b *testing.B) {
		key := store.SessionKey{App: "bench", User: "u", Session: "get"}
		create(b, key)
		for _, as := range sides {
			for range 1000 {
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: data}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		benchAlternate(b, func(side int) error {
			s, err := sides[side].GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
			if err == nil && len(s.Events) != 1000 {
				err = fmt.Errorf("%d events", len(s.Events))
			}
			return err
		})
	})
}

// benchEncryptionStores returns a keyring and an opener of stores for an
// encryption benchmark: open(nil) a plain store, open(ring) an encrypted
// one, each at a new location and closed when b ends.
func benchEncryptionStores(b *testing.B, h Harness, o BenchOptions) (store.KeyRing, func(store.KeyRing) store.Store) {
	ring := openRing(b, b.TempDir(), kekText(b, "v1"))
	open := func(keys store.KeyRing) store.Store {
		st, err := h.OpenWith(context.Background(), h.NewLocation(b), time.Now, Options{Durability: o.Durability, Keys: keys})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { closeBench(b, st) })
		return st
	}
	return ring, open
}

// benchReplyText is the text of the encryption benchmarks' model replies
// (~550 bytes).
func benchReplyText() string {
	text := ""
	for i := range 10 {
		text += fmt.Sprintf("sentence %d of a model reply about the task at hand. ", i)
	}
	return text
}

// benchAlternate runs call for side 0 (plain) and side 1 (encrypted) in
// every iteration, flipping which goes first, and reports each side's
// ns/op and the ratio encrypted/plain.
func benchAlternate(b *testing.B, call func(side int) error) {
	var spent [2]time.Duration
	n := 0
	for b.Loop() {
		for j := range 2 {
			side := (j + n) % 2
			start := time.Now()
			err := call(side)
			spent[side] += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	plain := float64(spent[0].Nanoseconds()) / float64(n)
	enc := float64(spent[1].Nanoseconds()) / float64(n)
	b.ReportMetric(plain, "plain-ns/op")
	b.ReportMetric(enc, "encrypted-ns/op")
	b.ReportMetric(enc/plain, "ratio")
}
