package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// agentFixture writes agent sessions: events with state deltas in all
// three scopes, event data and state values that are valid JSON but not
// compact (so that re-encoding would show), a session-state update (its
// version is more than 1 + its events), a session whose session state
// needs two requests, the same session id under two users and two apps,
// an id with a slash, app and user state that no session refers to any
// more, app state of more keys than one request takes, and a deleted
// session.
func (e *testEnv) agentFixture() {
	t := e.t
	t.Helper()
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	as := st.AgentSessions()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	create := func(k store.SessionKey, s store.ScopedState) {
		t.Helper()
		_, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k, State: s})
		must(err)
	}
	update := func(k store.SessionKey, d store.ScopedState) {
		t.Helper()
		_, err := as.UpdateState(ctx, store.UpdateStateRequest{Key: k, Delta: d})
		must(err)
	}
	ada := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	create(ada, store.ScopedState{
		App:     map[string]json.RawMessage{"greeting": raw(`"hi"`)},
		User:    map[string]json.RawMessage{"tier": raw(`"gold"`)},
		Session: map[string]json.RawMessage{"topic": raw(`{ "area" : "billing" }`)}})
	for i := range 12 {
		e.clock.Advance(700 * time.Millisecond)
		ev := store.AgentEvent{ID: fmt.Sprintf("e%02d", i), InvocationID: fmt.Sprintf("inv-%d", i/5),
			Data: raw(fmt.Sprintf(`{"author": "model",  "n": %d, "text": "h\u00e9llo <b>&</b> é\n"}`, i))}
		if i%3 == 0 { // some events carry their own time, some take the store's
			ev.Timestamp = e.clock.Now().Add(-time.Duration(i) * 1001 * time.Millisecond)
		}
		_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: ada, Event: ev, Delta: store.ScopedState{
			App:     map[string]json.RawMessage{"model": raw(fmt.Sprintf(`"m-%d"`, i%2))},
			User:    map[string]json.RawMessage{"lang": raw(`[ "en", "fr" ]`)},
			Session: map[string]json.RawMessage{"step": raw(fmt.Sprint(i))},
		}})
		must(err)
	}
	e.clock.Advance(time.Second)
	update(ada, store.ScopedState{Session: map[string]json.RawMessage{"note": raw(`null`)}})
	update(ada, store.ScopedState{Session: map[string]json.RawMessage{"note": raw(`{"spaced":  true}`)}})

	// The same session id under another user, with no events.
	e.clock.Advance(time.Second)
	create(store.SessionKey{App: "support", User: "bob", Session: "s1"}, store.ScopedState{})
	// A session with more session state than one request takes.
	big := store.SessionKey{App: "support", User: "ada", Session: "thread/42"}
	create(big, store.ScopedState{})
	for part := range 2 {
		e.clock.Advance(time.Second)
		m := map[string]json.RawMessage{}
		for i := range 800 {
			m[fmt.Sprintf("k%04d", part*800+i)] = raw(fmt.Sprint(i))
		}
		update(big, store.ScopedState{Session: m})
	}
	// Another app: the same ids again, and app state of many keys.
	e.clock.Advance(time.Second)
	bill := store.SessionKey{App: "billing", User: "ada", Session: "s1"}
	create(bill, store.ScopedState{Session: map[string]json.RawMessage{"x": raw(`1`)}})
	_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: bill, Event: store.AgentEvent{ID: "only", Data: raw(`{}`)}})
	must(err)
	many := map[string]json.RawMessage{}
	for i := range 1100 {
		many[fmt.Sprintf("rate.%d", i)] = raw(fmt.Sprintf("%d.5", i))
	}
	half := map[string]json.RawMessage{}
	for k, v := range many {
		if len(half) < 600 {
			half[k] = v
			delete(many, k)
		}
	}
	update(store.SessionKey{App: "billing"}, store.ScopedState{App: half})
	update(store.SessionKey{App: "billing"}, store.ScopedState{App: many})
	// State nobody's session refers to: an app without sessions, a user
	// without sessions, and the user state left by a deleted session.
	update(store.SessionKey{App: "quiet"}, store.ScopedState{App: map[string]json.RawMessage{"on": raw(`false`)}})
	update(store.SessionKey{App: "support", User: "dave"}, store.ScopedState{User: map[string]json.RawMessage{"vip": raw(`true`)}})
	gone := store.SessionKey{App: "billing", User: "carol", Session: "tmp"}
	create(gone, store.ScopedState{User: map[string]json.RawMessage{"seen": raw(`"yes"`)}})
	must(as.DeleteSession(ctx, gone))
}

func TestAgentSessionsExportImport(t *testing.T) {
	t.Parallel()
	bothBackends(t, testAgentSessionsExportImport)
}

func testAgentSessionsExportImport(t *testing.T, newTestEnv envMaker) {
	src := newTestEnv(t)
	src.agentFixture()
	out := src.run("export").want(t, 0).stdout
	var doc archive.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.AgentSessions
	if doc.Version != archive.Version || a == nil || len(a.Sessions) != 4 {
		t.Fatalf("export: version %d, agent sessions %+v", doc.Version, a)
	}
	// Shared state once per application and per user, in byte order;
	// each session carries its own session state only.
	var apps, users []string
	for _, s := range a.AppState {
		apps = append(apps, s.App)
	}
	for _, s := range a.UserState {
		users = append(users, s.App+"/"+s.User)
	}
	if !slices.Equal(apps, []string{"billing", "quiet", "support"}) ||
		!slices.Equal(users, []string{"billing/carol", "support/ada", "support/dave"}) {
		t.Errorf("app state of %v, user state of %v", apps, users)
	}
	s := a.Sessions[1] // billing/ada/s1, then support/ada/s1
	if s.App != "support" || s.User != "ada" || s.Session != "s1" || s.Version != 15 || s.EventCount != 12 || len(s.Events) != 12 {
		t.Fatalf("session %s/%s/%s: version %d, %d events", s.App, s.User, s.Session, s.Version, len(s.Events))
	}
	if _, ok := s.State["greeting"]; ok || s.State["note"] != `{"spaced":  true}` || s.State["topic"] != `{ "area" : "billing" }` {
		t.Errorf("session state: %v", s.State)
	}
	if ev := s.Events[1]; ev.Seq != 2 || ev.InvocationID != "inv-0" || ev.Data != `{"author": "model",  "n": 1, "text": "h\u00e9llo <b>&</b> é\n"}` {
		t.Errorf("event: %+v", ev)
	}

	// Import elsewhere: the agent facet dumps the same.
	file := filepath.Join(src.dir, "agents.json")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := newTestEnv(t)
	dst.clock = src.clock
	dst.clock.Advance(time.Hour)
	r := dst.run("import", file, "--json").want(t, 0)
	var sum importJSON
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.AgentSessions != 4 || sum.Files != 1 {
		t.Fatalf("import: %s (%v)", r.stdout, err)
	}
	want, got := src.dump(), dst.dump()
	sameDump(t, "agent sessions after import", map[facet.Name]string{facet.AgentSessions: want[facet.AgentSessions]},
		map[facet.Name]string{facet.AgentSessions: got[facet.AgentSessions]})

	// Again: a session that exists fails the file before anything is
	// written; --skip-existing skips sessions, and state keys with the
	// same value are nothing to write.
	before := fileState(t, dst.db)
	dst.run("import", file).want(t, exitConflict).oneLineErr(t, "agent session s1 (app billing, user ada) exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	r = dst.run("import", "--skip-existing", file).want(t, 0)
	if r.stdout != "imported nothing from 1 file, 4 existing skipped\n" {
		t.Errorf("import --skip-existing: %q", r.stdout)
	}

	// A shared state key with another value conflicts; --skip-existing
	// keeps the stored value and writes the missing keys.
	third := newTestEnv(t)
	st := third.openStore()
	_, err := st.AgentSessions().UpdateState(context.Background(), store.UpdateStateRequest{Key: store.SessionKey{App: "support"},
		Delta: store.ScopedState{App: map[string]json.RawMessage{"greeting": json.RawMessage(`"hello"`)}}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	before = fileState(t, third.db)
	third.run("import", file).want(t, exitConflict).oneLineErr(t, `app state key "greeting" of app support exists with another value (use --skip-existing)`)
	sameFiles(t, before, fileState(t, third.db))
	third.run("import", "--skip-existing", file).want(t, 0)
	st = third.openStore()
	state, err := st.AgentSessions().GetState(context.Background(), store.SessionKey{App: "support"})
	st.Close()
	if err != nil || string(state.App["greeting"]) != `"hello"` || string(state.App["model"]) != `"m-1"` {
		t.Errorf("app state after --skip-existing: %v (%v)", state.App, err)
	}

	// Export by id: the sessions of that session id in every app and
	// user, and the shared state of their apps and users.
	var one archive.Document
	if err := json.Unmarshal([]byte(src.run("export", "thread/42").want(t, 0).stdout), &one); err != nil {
		t.Fatal(err)
	}
	if a := one.AgentSessions; len(a.Sessions) != 1 || len(a.Sessions[0].State) != 1600 || len(a.AppState) != 1 ||
		a.AppState[0].App != "support" || len(a.UserState) != 1 || a.UserState[0].User != "ada" {
		t.Errorf("export thread/42: %d sessions, app state %v, user state %v", len(a.Sessions), len(a.AppState), len(a.UserState))
	}
	if err := json.Unmarshal([]byte(src.run("export", "s1").want(t, 0).stdout), &one); err != nil {
		t.Fatal(err)
	}
	if len(one.AgentSessions.Sessions) != 3 {
		t.Errorf("export s1: %d agent sessions, want 3", len(one.AgentSessions.Sessions))
	}
}

// Version-1 export files (before agent sessions) still import; a version-1
// file does not carry agent sessions.
func TestImportExportVersion1(t *testing.T) {
	t.Parallel()
	bothBackends(t, testImportExportVersion1)
}

func testImportExportVersion1(t *testing.T, newTestEnv envMaker) {
	src := newTestEnv(t)
	src.fixture()
	src.convFixture()
	var doc map[string]any
	if err := json.Unmarshal([]byte(src.run("export").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = 1
	delete(doc, "agent_sessions")
	delete(doc, "audit")
	delete(doc, "spend")
	v1, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dst := newTestEnv(t)
	r := dst.runStdin(string(v1), "import", "-").want(t, 0)
	if r.stdout != "imported 4 governed sessions and 3 conversations from 1 file\n" {
		t.Errorf("import of a version-1 file: %q", r.stdout)
	}
	doc["agent_sessions"] = map[string]any{"app_state": []any{}, "user_state": []any{}, "sessions": []any{}}
	v1, _ = json.Marshal(doc)
	newTestEnv(t).runStdin(string(v1), "import", "-").want(t, exitUsage).oneLineErr(t, "agent_sessions: not part of export version 1")
}

func TestImportBadAgentSessions(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	session := func(edit func(s map[string]any)) string {
		s := map[string]any{
			"app": "a", "user": "u", "session": "s", "version": 3, "event_count": 2,
			"created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:05:05Z",
			"state": map[string]any{"k": "1"},
			"events": []any{
				map[string]any{"id": "e1", "seq": 1, "timestamp": "2026-01-02T03:04:06Z", "data": "{}"},
				map[string]any{"id": "e2", "seq": 2, "timestamp": "2026-01-02T03:04:07Z", "data": "[1]"},
			},
		}
		edit(s)
		b, err := json.Marshal(map[string]any{"format": "sessionctl-export", "version": 2,
			"agent_sessions": map[string]any{"sessions": []any{s}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	event := func(s map[string]any, i int) map[string]any { return s["events"].([]any)[i].(map[string]any) }
	r := e.runStdin(session(func(map[string]any) {}), "import", "--dry-run", "-").want(t, 0)
	if r.stdout != "checked (dry run, nothing written) 1 agent session from 1 file\n" {
		t.Errorf("dry run: %q", r.stdout)
	}
	for _, c := range []struct {
		edit func(s map[string]any)
		msg  string
	}{
		{func(s map[string]any) { s["app"] = "" }, "agent_sessions.sessions[0].app: must not be empty"},
		{func(s map[string]any) { s["event_count"] = 3 }, "event_count: is 3, but the session has 2 events"},
		{func(s map[string]any) { event(s, 1)["seq"] = 3 }, "events[1].seq: is 3, want 2"},
		{func(s map[string]any) { event(s, 1)["id"] = "e1" }, "events[1].id: event id e1 appears twice"},
		{func(s map[string]any) { event(s, 0)["id"] = "" }, "events[0].id: must not be empty"},
		{func(s map[string]any) { delete(event(s, 0), "timestamp") }, "events[0].timestamp: must be set"},
		{func(s map[string]any) { event(s, 0)["data"] = "{nope" }, "must be a JSON document"},
		{func(s map[string]any) { s["state"] = map[string]any{"k": "not json"} }, "value must be a JSON document"},
		{func(s map[string]any) { s["version"] = 0 }, "agent_sessions.sessions[0].version: must be at least 1"},
		{func(s map[string]any) { delete(s, "created_at") }, "created_at: must be a time from 1970 to 9999"},
		{func(s map[string]any) { s["surprise"] = true }, "unknown field"},
	} {
		e.runStdin(session(c.edit), "import", "-").want(t, exitUsage).oneLineErr(t, c.msg)
	}
	twice := `{"format": "sessionctl-export", "version": 2, "agent_sessions": {"app_state": [{"app": "a", "state": {}}, {"app": "a", "state": {}}]}}`
	e.runStdin(twice, "import", "-").want(t, exitUsage).oneLineErr(t, "app a appears twice")
}

func TestAgentSessionsStatsAndGC(t *testing.T) {
	t.Parallel()
	bothBackends(t, testAgentSessionsStatsAndGC)
}

func testAgentSessionsStatsAndGC(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.agentFixture()
	var doc statsJSON
	if err := json.Unmarshal([]byte(e.run("stats", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := agentCounts{Total: 4, Apps: 3, Users: 5, Events: 13, AppStateKeys: 1103, UserStateKeys: 4, SessionStateKeys: 1604}
	if doc.AgentSessions != want {
		t.Errorf("stats: %+v, want %+v", doc.AgentSessions, want)
	}
	r := e.run("stats").want(t, 0)
	for _, line := range []string{
		"agent sessions     4 in 3 apps, 5 users; 13 events\n",
		"agent state        1103 app, 4 user, 1604 session keys\n",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("stats lacks %q:\n%s", line, r.stdout)
		}
	}

	// gc reports idle agent sessions and keeps them.
	e.clock.Advance(time.Hour)
	var gc gcJSON
	if err := json.Unmarshal([]byte(e.run("gc", "--older-than", "30m", "--json").want(t, 0).stdout), &gc); err != nil {
		t.Fatal(err)
	}
	if gc.IdleAgentSessions != 4 {
		t.Errorf("gc: %d idle agent sessions, want 4", gc.IdleAgentSessions)
	}
	r = e.run("gc", "--older-than", "30m", "--dry-run").want(t, 0)
	if !strings.Contains(r.stdout, "kept 4 agent sessions not updated since ") {
		t.Errorf("gc --dry-run:\n%s", r.stdout)
	}
	if r = e.run("gc", "--older-than", "2h").want(t, 0); strings.Contains(r.stdout, "agent") {
		t.Errorf("gc with no idle agent session:\n%s", r.stdout)
	}
	if err := json.Unmarshal([]byte(e.run("stats", "--json").want(t, 0).stdout), &doc); err != nil || doc.AgentSessions != want {
		t.Errorf("gc changed agent sessions: %+v (%v)", doc.AgentSessions, err)
	}
	help := strings.ToLower(strings.Join(strings.Fields(e.run("gc", "--help").want(t, 0).stdout), " "))
	for _, f := range facet.All() {
		if !strings.Contains(help, f.Title+":") {
			t.Errorf("gc --help does not say what it does with %s", f.Title)
		}
	}
}
