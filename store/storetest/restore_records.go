package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunRestoreRecords tests store.RecordRestorer, for backends that
// implement it (the suite skips otherwise): records come back exactly as
// given — versions, positions and times — an existing id is reported and
// left alone, and anything failing in the transaction leaves nothing.
func RunRestoreRecords(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, e *env, r store.RecordRestorer)
	}{
		{"Exact", testRestoreRecordsExact},
		{"Existing", testRestoreRecordsExisting},
		{"Atomic", testRestoreRecordsAtomic},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, h)
			r, ok := e.st.(store.RecordRestorer)
			if !ok {
				t.Skip("the store does not implement store.RecordRestorer")
			}
			c.fn(t, e, r)
		})
	}
}

// restoreFixture is one record of each kind, with values the facets' own
// write methods would never produce: a version of 7, messages at 3 to 5,
// times in the past, a turn generation of 41.
func restoreFixture(e *env) (store.Session, store.ConversationRecord, store.RuntimeRecord, store.AgentSession) {
	t0 := e.clock.Now().Add(-48 * time.Hour)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	gov := store.Session{ID: "g1", AgentID: "ag", DelegationChain: []string{}, AuthorizedTools: []string{"t"},
		AuthorizedCredentials: []string{}, TimeLimit: 100 * 24 * time.Hour, CallBudget: 5, CallsMade: 2, RateWindow: time.Minute,
		RateWindowStart: ms(1), Sensitivity: store.SensitivityInternal, Status: store.StatusActive,
		CreatedAt: ms(0), ExpiresAt: ms(0).Add(100 * 24 * time.Hour)}
	c := store.NewConversation("c1")
	c.Version, c.CreatedAt, c.UpdatedAt, c.MessageCount = 7, ms(0), ms(9), 3
	for i := range 3 {
		m := store.UserMessage("m")
		m.Seq, m.CreatedAt = int64(3+i), ms(2+i)
		c.Messages = append(c.Messages, m)
	}
	conv := store.ConversationRecord{Conversation: c,
		Artifacts: []store.Artifact{{URI: "u1", Content: "x", CreatedAt: ms(3), UpdatedAt: ms(4)}},
		Traces:    []store.TraceEvent{{Seq: 4, Kind: store.TraceToolExecution, Name: "n", CreatedAt: ms(5)}},
		Reports:   []store.VerificationReport{{Seq: 2, Subject: "s", Status: store.VerificationPassed, CreatedAt: ms(6)}},
		Runs: []store.RunRecord{{Snapshot: store.RunSnapshot{ID: "r1", Status: store.RunCompleted, CreatedAt: ms(1), UpdatedAt: ms(7)},
			Events: []store.RunEvent{{Seq: 3, Timestamp: ms(7), Event: json.RawMessage(`{"a":1}`)}}}},
	}
	content := []byte("upload")
	rt := store.RuntimeRecord{
		Session: store.RuntimeSession{ID: "r1", AgentAlias: "al", WorkspaceDir: "/w", ChatMode: store.ChatModeChat,
			CreatedAt: ms(0), LastActive: ms(8), Turn: store.TurnState{Generation: 41, StartedAt: ms(8), Running: true, Owner: "gone"}},
		Uploads: []store.UploadRecord{{Upload: store.Upload{RefID: "f", Marker: "[f]", WorkspacePath: "/w/f", CreatedAt: ms(4)}, Content: content}},
	}
	as := store.AgentSession{Key: store.SessionKey{App: "app", User: "u", Session: "s"}, Version: 9, EventCount: 2,
		CreatedAt: ms(0), UpdatedAt: ms(9),
		State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`{ "spaced" : 1 }`)}},
		Events: []store.AgentEvent{
			{Seq: 1, ID: "e1", Timestamp: ms(1), Data: json.RawMessage(`{"n": 1}`)},
			{Seq: 2, ID: "e2", InvocationID: "i", Timestamp: ms(2), Data: json.RawMessage(`[2]`)},
		}}
	return gov, conv, rt, as
}

func putAll(w store.RecordWriter, gov store.Session, conv store.ConversationRecord, rt store.RuntimeRecord, as store.AgentSession) ([]bool, error) {
	var out []bool
	for _, put := range []func() (bool, error){
		func() (bool, error) { return w.PutGovernedSession(gov) },
		func() (bool, error) { return w.PutConversation(conv) },
		func() (bool, error) { return w.PutRuntimeSession(rt) },
		func() (bool, error) { return w.PutAgentSession(as) },
	} {
		ok, err := put()
		if err != nil {
			return out, err
		}
		out = append(out, ok)
	}
	if _, err := w.PutAppState("app", map[string]json.RawMessage{"a": json.RawMessage(`1`)}); err != nil {
		return out, err
	}
	return out, nil
}

func testRestoreRecordsExact(t *testing.T, e *env, r store.RecordRestorer) {
	gov, conv, rt, as := restoreFixture(e)
	if err := r.RestoreRecords(e.ctx, func(w store.RecordWriter) error {
		_, err := putAll(w, gov, conv, rt, as)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.st.Governance().Get(e.ctx, "g1"); err != nil || !reflect.DeepEqual(got, gov) {
		t.Errorf("governed session: %+v (%v), want %+v", got, err, gov)
	}
	c, err := e.st.Conversations().Load(e.ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := conv.Conversation
	if c.Version != 7 || c.MessageCount != 3 || !c.CreatedAt.Equal(want.CreatedAt) || !c.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("conversation: version %d, %d messages, times %v %v", c.Version, c.MessageCount, c.CreatedAt, c.UpdatedAt)
	}
	for i, m := range c.Messages {
		if m.Seq != int64(3+i) || !m.CreatedAt.Equal(want.Messages[i].CreatedAt) {
			t.Errorf("message %d: seq %d at %v", i, m.Seq, m.CreatedAt)
		}
	}
	if last, err := e.st.Conversations().Messages(e.ctx, "c1", 5, 10); err != nil || len(last) != 1 || last[0].Seq != 5 {
		t.Errorf("messages from position 5: %+v (%v)", last, err)
	}
	arts, err := e.st.Conversations().Artifacts(e.ctx, "c1")
	if err != nil || len(arts) != 1 || !arts[0].UpdatedAt.Equal(conv.Artifacts[0].UpdatedAt) || !arts[0].CreatedAt.Equal(conv.Artifacts[0].CreatedAt) {
		t.Errorf("artifacts: %+v (%v)", arts, err)
	}
	traces, err := e.st.Conversations().Traces(e.ctx, "c1", 0, 0)
	if err != nil || len(traces) != 1 || traces[0].Seq != 4 || !traces[0].CreatedAt.Equal(conv.Traces[0].CreatedAt) {
		t.Errorf("traces: %+v (%v)", traces, err)
	}
	reports, err := e.st.Conversations().Reports(e.ctx, "c1")
	if err != nil || len(reports) != 1 || reports[0].Seq != 2 || !reports[0].CreatedAt.Equal(conv.Reports[0].CreatedAt) {
		t.Errorf("reports: %+v (%v)", reports, err)
	}
	runs, err := e.st.Conversations().Runs(e.ctx, "c1")
	if err != nil || len(runs) != 1 || runs[0].Events[0].Seq != 3 || !runs[0].Snapshot.UpdatedAt.Equal(conv.Runs[0].Snapshot.UpdatedAt) {
		t.Errorf("runs: %+v (%v)", runs, err)
	}
	s, err := e.st.Runtime().Get(e.ctx, "r1")
	// The last turn keeps its generation, start and owner; it is not
	// running (it belonged to the process that ran it).
	if err != nil || !s.LastActive.Equal(rt.Session.LastActive) || s.Turn.Generation != 41 || s.Turn.Running || s.Turn.Owner != rt.Session.Turn.Owner {
		t.Errorf("runtime session: %+v (%v)", s, err)
	}
	u, content, err := e.st.Runtime().ReadUpload(e.ctx, "r1", "f")
	if err != nil || string(content) != "upload" || !u.CreatedAt.Equal(rt.Uploads[0].Upload.CreatedAt) {
		t.Errorf("upload: %+v %q (%v)", u, content, err)
	}
	// Generations are never reused: the next turn comes after 41.
	gen, _, err := e.st.Runtime().BeginTurn(e.ctx, "r1")
	if err != nil || gen <= 41 {
		t.Errorf("BeginTurn after a restore: %d (%v), want > 41", gen, err)
	}
	got, err := e.st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: as.Key, IncludeEvents: true})
	if err != nil || got.Version != 9 || got.EventCount != 2 || !got.UpdatedAt.Equal(as.UpdatedAt) ||
		string(got.State.Session["k"]) != `{ "spaced" : 1 }` || string(got.State.App["a"]) != `1` ||
		len(got.Events) != 2 || got.Events[1].InvocationID != "i" || string(got.Events[0].Data) != `{"n": 1}` {
		t.Errorf("agent session: %+v (%v)", got, err)
	}
}

func testRestoreRecordsExisting(t *testing.T, e *env, r store.RecordRestorer) {
	gov, conv, rt, as := restoreFixture(e)
	if err := r.RestoreRecords(e.ctx, func(w store.RecordWriter) error {
		_, err := putAll(w, gov, conv, rt, as)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	conv.Conversation.Version = 99
	var oks []bool
	var differing []string
	if err := r.RestoreRecords(e.ctx, func(w store.RecordWriter) error {
		var err error
		if oks, err = putAll(w, gov, conv, rt, as); err != nil {
			return err
		}
		differing, err = w.PutAppState("app", map[string]json.RawMessage{"a": json.RawMessage(`2`), "b": json.RawMessage(`3`)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(oks, []bool{false, false, false, false}) || !reflect.DeepEqual(differing, []string{"a"}) {
		t.Errorf("second restore: %v, differing %v", oks, differing)
	}
	if c, err := e.st.Conversations().Info(e.ctx, "c1"); err != nil || c.Version != 7 {
		t.Errorf("the existing conversation changed: version %d (%v)", c.Version, err)
	}
	st, err := e.st.AgentSessions().GetState(e.ctx, store.SessionKey{App: "app"})
	if err != nil || string(st.App["a"]) != "1" || string(st.App["b"]) != "3" {
		t.Errorf("app state: %v (%v)", st.App, err)
	}
}

func testRestoreRecordsAtomic(t *testing.T, e *env, r store.RecordRestorer) {
	gov, conv, rt, as := restoreFixture(e)
	stop := errors.New("stop")
	err := r.RestoreRecords(e.ctx, func(w store.RecordWriter) error {
		if _, err := putAll(w, gov, conv, rt, as); err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("RestoreRecords = %v, want the error of fn", err)
	}
	if err := r.RestoreRecords(e.ctx, nil); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("RestoreRecords with a nil fn = %v, want ErrInvalidInput", err)
	}
	bad := conv
	bad.Conversation.ID = "c2"
	bad.Conversation.Messages = append([]store.Message(nil), conv.Conversation.Messages...)
	bad.Conversation.Messages[2].Seq = 9 // a gap
	err = r.RestoreRecords(e.ctx, func(w store.RecordWriter) error {
		if _, err := w.PutGovernedSession(gov); err != nil {
			return err
		}
		_, err := w.PutConversation(bad)
		return err
	})
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("a gap in positions: %v, want ErrInvalidInput", err)
	}
	if _, err := e.st.Governance().Get(e.ctx, "g1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("governed session after rolled-back restores: %v", err)
	}
	for _, id := range []string{"c1", "c2"} {
		if ok, err := e.st.Conversations().Exists(e.ctx, id); ok || err != nil {
			t.Errorf("conversation %s after rolled-back restores: %v %v", id, ok, err)
		}
	}
	if _, err := e.st.Runtime().Get(e.ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("runtime session after a rolled-back restore: %v", err)
	}
	if _, err := e.st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: as.Key}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("agent session after a rolled-back restore: %v", err)
	}
}
