package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"log"
)

func main() {
	ctx := context.Background()
	_ = ctx
st := must(sqlstore.Open(ctx, "sessions.db"))
defer st.Close()
as := st.AgentSessions()
key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
must(as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}))
for i := 1; i <= 45; i++ {
	must(as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: fmt.Sprint("e", i), InvocationID: "inv-1", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}))
}
summaryJSON := json.RawMessage(`{"author":"model","content":{"parts":[{"text":"the first steps, summarized"}]}}`)

err := snippet(ctx, as, key, summaryJSON)
if err != nil {
	log.Fatal("the snippet returned ", err)
}
retry := want(as.GetSession(ctx, store.GetAgentSessionRequest{Key: store.SessionKey{App: "support", User: "ada", Session: "s1-retry"}}))
if retry.EventCount != 40 {
	failf("the fork holds %d events, want 40", retry.EventCount)
}
if sup := want(as.Superseded(ctx, key)); len(sup) != 1 || len(sup[0].Events) != 33 {
	failf("superseded after the rewind: %+v", sup)
}
got := want(as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true}))
if len(got.Events) == 0 || got.Events[0].Compaction == nil {
	failf("no compaction record: %d events", len(got.Events))
}
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal("setup: ", err)
	}
	return v
}

func want[T any](v T, err error) T {
	if err != nil {
		failf("%v", err)
	}
	return v
}

func want2[T, U any](v T, w U, err error) (T, U) {
	if err != nil {
		failf("%v", err)
	}
	return v, w
}

func failf(format string, args ...any) {
	log.Fatalf("check after the snippet: "+format, args...)
}


func snippet(ctx context.Context, as store.AgentSessions, key store.SessionKey, summaryJSON json.RawMessage) error {

return nil
}
