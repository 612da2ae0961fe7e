package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// An agent session's history as a tree: fork it to retry from an event,
// rewind it, and append a compaction record that summarises a range.
func Example_forkRewindCompact() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()

	key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage("0")}}}); err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: json.RawMessage(`{}`)},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))}}})
		if err != nil {
			log.Fatal(err)
		}
	}
	ids := func(evs []store.AgentEvent) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}

	// Retry from event 3: no event is copied.
	retry, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 3, Session: "s1-retry"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fork:", retry.EventCount, "events, step", string(retry.State.Session["step"]))

	// Summarise events 1-4; the originals stay.
	if _, err := as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 4},
		Summary: store.AgentEvent{ID: "summary", Data: json.RawMessage(`"steps 1-4"`)}}); err != nil {
		log.Fatal(err)
	}
	s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("summary and what follows:", ids(s.Events))

	// Rewind to event 2: the rest is superseded, the state restored.
	s, err = as.Rewind(ctx, store.RewindRequest{Key: key, To: 2})
	if err != nil {
		log.Fatal(err)
	}
	runs, err := as.Superseded(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rewound:", s.EventCount, "events, step", string(s.State.Session["step"]), "superseded", ids(runs[0].Events))
	f, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: retry.Key, IncludeEvents: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the fork still reads:", ids(f.Events))
	// Output:
	// fork: 3 events, step 3
	// summary and what follows: [summary e5]
	// rewound: 2 events, step 2 superseded [e3 e4 e5 summary]
	// the fork still reads: [e1 e2 e3]
}
