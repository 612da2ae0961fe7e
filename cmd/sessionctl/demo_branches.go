package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentstore/sessionstore/store"
)

// demoApp is the application of the demo's agent sessions (user
// demoAgent, session id the governed session's).
const demoApp = "sessionctl-demo"

// demoBranches shows an agent session's history as a tree: six events
// with state changes, a compaction record summarising the first four, a
// fork at event 5 that continues on its own, and what a runtime reads
// back ("latest summary + what follows").
func demoBranches(ctx context.Context, out io.Writer, st cliStore, id string) error {
	as := st.AgentSessions()
	key := store.SessionKey{App: demoApp, User: demoAgent, Session: id}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage("0")}}}); err != nil {
		return fmt.Errorf("create agent session: %w", err)
	}
	for i := 1; i <= 6; i++ {
		ev := store.AgentEvent{ID: fmt.Sprintf("turn-%d", i), InvocationID: fmt.Sprintf("inv-%d", (i+1)/2),
			Data: json.RawMessage(fmt.Sprintf(`{"author":"agent","text":"step %d"}`, i))}
		delta := store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))}}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev, Delta: delta}); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
	}
	fmt.Fprintf(out, "\nagent session %s/%s/%s\n  6 events, each setting session state step\n", key.App, key.User, key.Session)
	sum, err := as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 4},
		Summary: store.AgentEvent{ID: "summary-1", Data: json.RawMessage(`{"author":"agent","text":"steps 1-4 done"}`)}})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	got, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		return fmt.Errorf("summary read: %w", err)
	}
	fmt.Fprintf(out, "  compaction record at event %d summarises events 1-4 (the originals stay); a summary read returns %s\n",
		sum.Event.Seq, eventIDList(got.Events))
	retry := key
	retry.Session = id + "-retry"
	f, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 5, Session: retry.Session})
	if err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: retry,
		Event: store.AgentEvent{ID: "retry-6", Data: json.RawMessage(`{"author":"agent","text":"step 6, another way"}`)},
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(`"6b"`)}}}); err != nil {
		return fmt.Errorf("append to the fork: %w", err)
	}
	fk, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: retry, IncludeEvents: true})
	if err != nil {
		return fmt.Errorf("read the fork: %w", err)
	}
	fmt.Fprintf(out, "  forked at event 5 as %s (no events copied; its state then: step %s), which went on: %s\n",
		retry.Session, f.State.Session["step"], eventIDList(fk.Events))
	nodes, err := as.History(ctx, retry)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	fmt.Fprintf(out, "  the tree (sessionctl history %s %s %s):\n", retry.App, retry.User, retry.Session)
	depths := treeDepths(nodes, func(n store.LineageNode) (int64, int64) { return n.ID, n.Parent })
	for i, n := range nodes {
		fmt.Fprintf(out, "    %*s%s: %d events, %s\n", 2*depths[i], "", n.Key.Session, n.EventCount, n.Status)
	}
	return nil
}

// eventIDList is "a, b, c".
func eventIDList(evs []store.AgentEvent) string {
	s := ""
	for i, ev := range evs {
		if i > 0 {
			s += ", "
		}
		s += ev.ID
	}
	return s
}
