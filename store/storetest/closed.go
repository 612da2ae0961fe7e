package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunStore runs the tests of the Store itself, across facets: what every
// method does after Close, and what HealthCheck reports.
func RunStore(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"EveryMethodAfterClose", testEveryMethodAfterClose},
		{"HealthCheckChangesNothing", testHealthCheckChangesNothing},
		{"ReadSnapshotIsOneInstant", testReadSnapshotOneInstant},
		{"ReadSnapshotRefusesWrites", testReadSnapshotRefusesWrites},
		{"ReadSnapshotMisuse", testReadSnapshotMisuse},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t, h)) })
	}
}

// closedCall is one method called on a closed store; it returns the
// method's error.
type closedCall func(ctx context.Context) error

// callsAfterClose returns a call of every method of every facet of st (and
// of st itself, except Close and the facet accessors), by interface and
// method name, each with arguments that are valid, so that closing the
// store is the only reason for it to fail.
func callsAfterClose(st store.Store) map[string]map[string]closedCall {
	g, c, rt, as := st.Governance(), st.Conversations(), st.Runtime(), st.AgentSessions()
	const id = "closed"
	key := store.SessionKey{App: "app", User: "u", Session: id}
	ev := store.AgentEvent{ID: "e1", InvocationID: "inv", Data: json.RawMessage(`{"id":"e1"}`)}
	delta := store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}
	restore, err := store.CreateRequest{ID: "restored", AgentID: "agent", TimeLimit: time.Hour}.Normalize()
	if err != nil {
		panic(err) // a constant, valid request
	}
	sess := restore.NewSession("restored", time.UnixMilli(1700000000000))
	use := store.UseRequest{SessionID: id, AgentID: "agent", Tools: []string{"read_file"}, RequestID: "r1"}
	content := []byte("upload")
	err1 := func(_ any, err error) error { return err }
	err2 := func(_, _ any, err error) error { return err }
	sp, au := st.Spend(), st.Audit()
	amount := store.SpendAmount{InputTokens: 10, OutputTokens: 10}
	return map[string]map[string]closedCall{
		"Spend": {
			"Reserve": func(ctx context.Context) error {
				return err1(sp.Reserve(ctx, store.ReserveRequest{SessionID: id, AgentID: "agent", RequestID: "res", Amount: amount}))
			},
			"Settle": func(ctx context.Context) error {
				return err1(sp.Settle(ctx, store.SettleRequest{SessionID: id, RequestID: "res", AgentID: "agent", Actual: amount}))
			},
			"Release": func(ctx context.Context) error {
				return err1(sp.Release(ctx, store.ReleaseRequest{SessionID: id, RequestID: "res", AgentID: "agent"}))
			},
			"Reservation": func(ctx context.Context) error { return err1(sp.Reservation(ctx, id, "res")) },
			"SetAgentLimits": func(ctx context.Context) error {
				return sp.SetAgentLimits(ctx, "agent", []store.SpendLimit{{Metric: store.MetricTotalTokens, Window: store.WindowDay, Limit: 1000}})
			},
			"Status":         func(ctx context.Context) error { return err1(sp.Status(ctx, id)) },
			"AgentStatus":    func(ctx context.Context) error { return err1(sp.AgentStatus(ctx, "agent")) },
			"ReleaseExpired": func(ctx context.Context) error { return err1(sp.ReleaseExpired(ctx)) },
			"Export":         func(ctx context.Context) error { return err1(sp.Export(ctx, nil)) },
			"ExportEach": func(ctx context.Context) error {
				return sp.ExportEach(ctx, nil, func(store.SpendLimitRecord) error { return nil }, func(store.ReservationRecord) error { return nil })
			},
			"Restore": func(ctx context.Context) error { return err1(sp.Restore(ctx, store.SpendRestoreRequest{})) },
		},
		"Audit": {
			"List":       func(ctx context.Context) error { return err1(au.List(ctx, store.AuditFilter{AgentID: "agent"})) },
			"Heads":      func(ctx context.Context) error { return err1(au.Heads(ctx)) },
			"Verify":     func(ctx context.Context) error { return err1(au.Verify(ctx)) },
			"Checkpoint": func(ctx context.Context) error { return err1(au.Checkpoint(ctx, "agent")) },
			"Prune": func(ctx context.Context) error {
				return err1(au.Prune(ctx, store.AuditPruneRequest{Before: time.UnixMilli(1700000000000), AgentID: "agent"}))
			},
			"Restore": func(ctx context.Context) error { return err1(au.Restore(ctx, store.AuditRestoreRequest{})) },
		},
		"Feed": {
			"Messages": func(ctx context.Context) error {
				return firstFeedErr(st.Feed().Messages(ctx, store.MessageFeed{ID: id}))
			},
			"Traces": func(ctx context.Context) error {
				return firstFeedErr(st.Feed().Traces(ctx, store.TraceFeed{ID: id}))
			},
			"RunEvents": func(ctx context.Context) error {
				return firstFeedErr(st.Feed().RunEvents(ctx, store.RunEventFeed{ID: id, RunID: "run"}))
			},
			"Events": func(ctx context.Context) error {
				return firstFeedErr(st.Feed().Events(ctx, store.EventFeed{Key: key}))
			},
			"GovernedSession": func(ctx context.Context) error {
				return firstFeedErr(st.Feed().GovernedSession(ctx, store.GovernedFeed{SessionID: id}))
			},
		},
		"Retention": retentionAfterClose(st.Retention()),
		"Store": {
			"SchemaVersion": func(ctx context.Context) error { return err2(st.SchemaVersion(ctx)) },
			"HealthCheck":   func(ctx context.Context) error { return st.HealthCheck(ctx) },
			"ReadSnapshot": func(ctx context.Context) error {
				return st.ReadSnapshot(ctx, func(context.Context) error { return nil })
			},
		},
		"Governance": {
			"Create": func(ctx context.Context) error {
				return err1(g.Create(ctx, store.CreateRequest{ID: "new", AgentID: "agent", TimeLimit: time.Hour}))
			},
			"Use":              func(ctx context.Context) error { return err1(g.Use(ctx, use)) },
			"Close":            func(ctx context.Context) error { return err1(g.Close(ctx, id)) },
			"Get":              func(ctx context.Context) error { return err1(g.Get(ctx, id)) },
			"List":             func(ctx context.Context) error { return err1(g.List(ctx, store.ListFilter{})) },
			"CountActive":      func(ctx context.Context) error { return err1(g.CountActive(ctx, "agent")) },
			"CloseAllForAgent": func(ctx context.Context) error { return err1(g.CloseAllForAgent(ctx, "agent")) },
			"Cleanup":          func(ctx context.Context) error { return err1(g.Cleanup(ctx)) },
			"Restore": func(ctx context.Context) error {
				return err1(g.Restore(ctx, store.RestoreRequest{Sessions: []store.Session{sess}}))
			},
		},
		"Conversations": {
			"Save":   func(ctx context.Context) error { return err1(c.Save(ctx, store.NewConversation("new"))) },
			"Load":   func(ctx context.Context) error { return err1(c.Load(ctx, id)) },
			"Info":   func(ctx context.Context) error { return err1(c.Info(ctx, id)) },
			"Delete": func(ctx context.Context) error { return c.Delete(ctx, id) },
			"Exists": func(ctx context.Context) error { return err1(c.Exists(ctx, id)) },
			"List":   func(ctx context.Context) error { return err1(c.List(ctx, store.ConversationFilter{})) },
			"AppendMessages": func(ctx context.Context) error {
				return err1(c.AppendMessages(ctx, id, store.UserMessage("hi")))
			},
			"Append": func(ctx context.Context) error {
				return err1(c.Append(ctx, store.AppendRequest{ID: id, Messages: []store.Message{store.UserMessage("hi")}}))
			},
			"Messages":       func(ctx context.Context) error { return err1(c.Messages(ctx, id, 0, 10)) },
			"MessagesBefore": func(ctx context.Context) error { return err1(c.MessagesBefore(ctx, id, 1, 10)) },
			"LastMessages":   func(ctx context.Context) error { return err1(c.LastMessages(ctx, id, 10)) },
			"MessageCount":   func(ctx context.Context) error { return err1(c.MessageCount(ctx, id)) },
			"PopMessage":     func(ctx context.Context) error { return err1(c.PopMessage(ctx, id)) },
			"TrimMessages":   func(ctx context.Context) error { return err1(c.TrimMessages(ctx, id, 1)) },
			"Fork": func(ctx context.Context) error {
				return err1(c.Fork(ctx, store.ConversationForkRequest{ID: id, At: 0, NewID: "fork"}))
			},
			"Rewind": func(ctx context.Context) error {
				return err1(c.Rewind(ctx, store.ConversationRewindRequest{ID: id, To: 0}))
			},
			"Compact": func(ctx context.Context) error {
				return err1(c.Compact(ctx, store.ConversationCompactRequest{ID: id, Range: store.CompactionRange{From: 0, To: 0},
					Summary: store.Message{Role: "assistant", Content: []store.ContentBlock{store.TextBlock("s")}}}))
			},
			"SummaryTail": func(ctx context.Context) error { return err1(c.SummaryTail(ctx, id, 10)) },
			"Superseded":  func(ctx context.Context) error { return err1(c.Superseded(ctx, id)) },
			"History":     func(ctx context.Context) error { return err1(c.History(ctx, id)) },
			"TrimAllMessages": func(ctx context.Context) error {
				return err1(c.TrimAllMessages(ctx, 1))
			},
			"DeleteUpdatedBefore": func(ctx context.Context) error {
				return err1(c.DeleteUpdatedBefore(ctx, time.UnixMilli(1700000000000), 10))
			},
			"PutArtifacts": func(ctx context.Context) error { return c.PutArtifacts(ctx, id, seedArtifact()) },
			"Artifact": func(ctx context.Context) error {
				return err1(c.Artifact(ctx, id, seedArtifact().URI))
			},
			"Artifacts": func(ctx context.Context) error { return err1(c.Artifacts(ctx, id)) },
			"AppendTraces": func(ctx context.Context) error {
				return err1(c.AppendTraces(ctx, id, seedTrace("x", true, 0, 0, 0)))
			},
			"SaveTraces": func(ctx context.Context) error { return c.SaveTraces(ctx, id, nil) },
			"Traces":     func(ctx context.Context) error { return err1(c.Traces(ctx, id, 0, 10)) },
			"PutRuns":    func(ctx context.Context) error { return c.PutRuns(ctx, id, seedRun()) },
			"AppendRunEvents": func(ctx context.Context) error {
				return err1(c.AppendRunEvents(ctx, id, "run-1", store.RunEvent{Event: json.RawMessage(`{"type":"x"}`)}))
			},
			"Run":           func(ctx context.Context) error { return err1(c.Run(ctx, id, "run-1")) },
			"Runs":          func(ctx context.Context) error { return err1(c.Runs(ctx, id)) },
			"AppendReports": func(ctx context.Context) error { return c.AppendReports(ctx, id, seedReport()) },
			"SaveReports": func(ctx context.Context) error {
				return c.SaveReports(ctx, id, []store.VerificationReport{seedReport()})
			},
			"Reports": func(ctx context.Context) error { return err1(c.Reports(ctx, id)) },
		},
		"Runtime": {
			"Insert": func(ctx context.Context) error { return err1(rt.Insert(ctx, rtNew("new"))) },
			"Get":    func(ctx context.Context) error { return err1(rt.Get(ctx, id)) },
			"Touch":  func(ctx context.Context) error { return rt.Touch(ctx, id) },
			"SetOverrides": func(ctx context.Context) error {
				m := "model"
				return err1(rt.SetOverrides(ctx, id, store.Overrides{Model: &m}))
			},
			"ListIDs":      func(ctx context.Context) error { return err1(rt.ListIDs(ctx, store.ListIDsRequest{})) },
			"Count":        func(ctx context.Context) error { return err1(rt.Count(ctx)) },
			"CountByAgent": func(ctx context.Context) error { return err1(rt.CountByAgent(ctx)) },
			"HistoryLen":   func(ctx context.Context) error { return err1(rt.HistoryLen(ctx, id)) },
			"HistorySlice": func(ctx context.Context) error { return err1(rt.HistorySlice(ctx, id, 0, 10)) },
			"EvictSameModeSiblings": func(ctx context.Context) error {
				return err1(rt.EvictSameModeSiblings(ctx, store.EvictRequest{OwnerID: "tui", ChatMode: store.ChatModeChat}))
			},
			"Remove": func(ctx context.Context) error { return err1(rt.Remove(ctx, id)) },
			"Kill":   func(ctx context.Context) error { return err1(rt.Kill(ctx, id)) },
			"PutUpload": func(ctx context.Context) error {
				return err1(rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "ref", Marker: "m",
					WorkspacePath: "uploads/a", Content: content}))
			},
			"GetUpload":  func(ctx context.Context) error { return err1(rt.GetUpload(ctx, id, "ref")) },
			"ReadUpload": func(ctx context.Context) error { return err2(rt.ReadUpload(ctx, id, "ref")) },
			"ListUploads": func(ctx context.Context) error {
				return err1(rt.ListUploads(ctx, store.ListUploadsRequest{SessionID: id}))
			},
			"BeginTurn":        func(ctx context.Context) error { return err2(rt.BeginTurn(ctx, id)) },
			"EndTurn":          func(ctx context.Context) error { return err1(rt.EndTurn(ctx, id, 1)) },
			"Cancel":           func(ctx context.Context) error { return err1(rt.Cancel(ctx, id, store.CauseClientRequest)) },
			"TakeCancelCause":  func(ctx context.Context) error { return err2(rt.TakeCancelCause(ctx, id, 1)) },
			"ReapCancelCauses": func(ctx context.Context) error { return err1(rt.ReapCancelCauses(ctx)) },
		},
		"AgentSessions": {
			"CreateSession": func(ctx context.Context) error {
				return err1(as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "app", User: "u", Session: "new"}}))
			},
			"GetSession": func(ctx context.Context) error {
				return err1(as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true}))
			},
			"ListSessions": func(ctx context.Context) error {
				return err1(as.ListSessions(ctx, store.ListAgentSessionsRequest{App: "app", User: "u"}))
			},
			"DeleteSession": func(ctx context.Context) error { return as.DeleteSession(ctx, key) },
			"AppendEvent": func(ctx context.Context) error {
				return err1(as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev, Delta: delta}))
			},
			"ListEvents": func(ctx context.Context) error {
				return err1(as.ListEvents(ctx, store.ListEventsRequest{Key: key}))
			},
			"GetState": func(ctx context.Context) error { return err1(as.GetState(ctx, key)) },
			"UpdateState": func(ctx context.Context) error {
				return err1(as.UpdateState(ctx, store.UpdateStateRequest{Key: key, Delta: delta}))
			},
			"ListApps": func(ctx context.Context) error { return err1(as.ListApps(ctx, store.ListAppsRequest{})) },
			"ListUsers": func(ctx context.Context) error {
				return err1(as.ListUsers(ctx, store.ListUsersRequest{App: key.App}))
			},
			"Fork": func(ctx context.Context) error {
				return err1(as.Fork(ctx, store.ForkRequest{Key: key, At: 0, Session: "fork"}))
			},
			"Rewind": func(ctx context.Context) error {
				return err1(as.Rewind(ctx, store.RewindRequest{Key: key, To: 0}))
			},
			"Compact": func(ctx context.Context) error {
				return err1(as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 1},
					Summary: store.AgentEvent{Data: json.RawMessage(`"s"`)}}))
			},
			"Superseded": func(ctx context.Context) error { return err1(as.Superseded(ctx, key)) },
			"History":    func(ctx context.Context) error { return err1(as.History(ctx, key)) },
		},
	}
}

// interfaceMethods returns the method names of the interface type of ptr,
// a nil pointer to it.
func interfaceMethods(ptr any) []string {
	typ := reflect.TypeOf(ptr).Elem()
	names := make([]string, typ.NumMethod())
	for i := range names {
		names[i] = typ.Method(i).Name
	}
	return names
}

// testEveryMethodAfterClose calls every method of every facet (and of the
// Store) on a closed store, with arguments that would succeed on an open
// one: each returns an error matching ErrStoreClosed, and none panics. The
// method list is checked against the interfaces, so a method added later
// without an entry here fails the test.
func testEveryMethodAfterClose(t *testing.T, e *env) {
	st := e.open()
	// Data the calls refer to, so that on an open store they would find it.
	if _, err := st.Governance().Create(e.ctx, store.CreateRequest{ID: "closed", AgentID: "agent",
		AuthorizedTools: []string{"read_file"}, CallBudget: 5, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Save(e.ctx, store.NewConversation("closed")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Runtime().Insert(e.ctx, rtNew("closed")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().CreateSession(e.ctx, store.CreateAgentSessionRequest{
		Key: store.SessionKey{App: "app", User: "u", Session: "closed"}}); err != nil {
		t.Fatal(err)
	}
	calls := callsAfterClose(st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	want := map[string][]string{
		"Store":         interfaceMethods((*store.Store)(nil)),
		"Governance":    interfaceMethods((*store.Governance)(nil)),
		"Conversations": interfaceMethods((*store.Conversations)(nil)),
		"Runtime":       interfaceMethods((*store.Runtime)(nil)),
		"AgentSessions": interfaceMethods((*store.AgentSessions)(nil)),
		"Feed":          interfaceMethods((*store.Feed)(nil)),
		"Spend":         interfaceMethods((*store.Spend)(nil)),
		"Audit":         interfaceMethods((*store.Audit)(nil)),
		"Retention":     interfaceMethods((*store.Retention)(nil)),
	}
	// Methods of Store that cannot fail: the accessors, Backend and Close
	// itself (called twice above).
	notCalls := []string{"Governance", "Conversations", "Runtime", "AgentSessions", "Feed", "Spend", "Audit", "Retention", "Backend", "Close"}
	for facet, methods := range want {
		for _, m := range methods {
			if facet == "Store" && slices.Contains(notCalls, m) {
				continue
			}
			call, ok := calls[facet][m]
			if !ok {
				t.Errorf("%s.%s has no call in callsAfterClose: add one", facet, m)
				continue
			}
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panic")
						t.Errorf("%s.%s after Close panicked: %v", facet, m, r)
					}
				}()
				return call(e.ctx)
			}()
			if !errors.Is(err, store.ErrStoreClosed) {
				t.Errorf("%s.%s after Close: %v, want ErrStoreClosed", facet, m, err)
			}
		}
		for m := range calls[facet] {
			if !slices.Contains(methods, m) {
				t.Errorf("callsAfterClose lists %s.%s, which the interface does not have", facet, m)
			}
		}
	}
	// The data is still there for a store opened again.
	if _, err := e.gov().Get(e.ctx, "closed"); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
}

// testHealthCheckChangesNothing: on a writable store HealthCheck is nil,
// also while other writers are busy, and its write probe leaves no trace:
// the schema version and the data read back as before. (Stores that cannot
// write are the backends' own tests: a read-only file, a read-only
// transaction.)
func testHealthCheckChangesNothing(t *testing.T, e *env) {
	if _, err := e.gov().Create(e.ctx, store.CreateRequest{ID: "s", AgentID: "agent",
		AuthorizedTools: []string{"*"}, CallBudget: 100, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before, latest, err := e.st.SchemaVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for range 20 {
			if _, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: "s", Tools: []string{"x"}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 10 {
		if err := e.st.HealthCheck(e.ctx); err != nil {
			t.Fatalf("HealthCheck of a healthy store: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Use alongside HealthCheck: %v", err)
	}
	after, latest2, err := e.st.SchemaVersion(e.ctx)
	if err != nil || after != before || latest2 != latest {
		t.Fatalf("schema version %d/%d (%v) after HealthCheck, want %d/%d", after, latest2, err, before, latest)
	}
	if s, err := e.gov().Get(e.ctx, "s"); err != nil || s.CallsMade != 20 {
		t.Fatalf("session after HealthCheck: %d calls, %v; want 20", s.CallsMade, err)
	}
	e.reopen()
	if err := e.st.HealthCheck(e.ctx); err != nil {
		t.Fatalf("HealthCheck after reopening: %v", err)
	}
}

// firstFeedErr reads a feed up to its first batch or error and returns the
// error (nil if a batch came first).
func firstFeedErr[T any](seq iter.Seq2[store.Batch[T], error]) error {
	for _, err := range seq {
		return err
	}
	return nil
}
