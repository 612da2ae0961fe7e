package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// TestUnitsInJSONAndTables: durations, money and times read as people
// write them and as the README promises JSON: governed time limits and
// rate windows in *_ms and "1 h", "2 per 1 min"; spend limits and the
// audit trail's details as exact decimals with their currency, never
// micro-units; a lifetime window without the Unix epoch as its start.
func TestUnitsInJSONAndTables(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--tool", "x", "--budget", "5", "--rate-limit", "2", "--rate-window", "1m").want(t, 0)
	e.run("limits", "a", "--limit", "cost=1USD").want(t, 0)
	e.run("reserve", "s1", "--cost", "0.75USD", "--request-id", "r1").want(t, 0)
	e.run("reserve", "s1", "--cost", "0.5USD", "--request-id", "r2").want(t, exitSpend)

	show := e.run("show", "s1").want(t, 0).stdout
	for _, want := range []string{"time limit   1 h\n", "2 calls per 1 min (", "agent cost  0.00 USD spent, 0.75 USD reserved of 1.00 USD (0.25 USD left)  lifetime\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not say %q:\n%s", want, show)
		}
	}
	if list := e.run("list").want(t, 0).stdout; !strings.Contains(list, " 2 per 1 min ") {
		t.Errorf("list: the rate is not \"2 per 1 min\":\n%s", list)
	}

	var lim struct {
		Limits []map[string]any `json:"limits"`
	}
	out := e.run("limits", "a", "--json").want(t, 0).stdout
	if err := json.Unmarshal([]byte(out), &lim); err != nil {
		t.Fatal(err)
	}
	if len(lim.Limits) != 1 || lim.Limits[0]["limit"] != "1.00 USD" || lim.Limits[0]["reserved"] != "0.75 USD" || lim.Limits[0]["remaining"] != "0.25 USD" {
		t.Errorf("limits --json: %s", out)
	}
	if strings.Contains(out, "1970-01-01") || strings.Contains(out, "window_start") {
		t.Errorf("limits --json: a lifetime window has a start:\n%s", out)
	}

	var audit struct {
		Events []struct {
			Outcome string         `json:"outcome"`
			Kind    string         `json:"kind"`
			Detail  map[string]any `json:"detail"`
		} `json:"events"`
	}
	out = e.run("audit", "--json").want(t, 0).stdout
	if err := json.Unmarshal([]byte(out), &audit); err != nil {
		t.Fatal(err)
	}
	refused, limits := false, false
	for _, ev := range audit.Events {
		switch {
		case ev.Outcome == "spend_limit_exceeded":
			refused = true
			d := ev.Detail
			if d["limit"] != "1.00 USD" || d["reserved"] != "0.75 USD" || d["requested"] != "0.50 USD" || d["spent"] != "0.00 USD" {
				t.Errorf("the refusal's detail: %v", d)
			}
			if _, ok := d["window_start"]; ok {
				t.Errorf("the refusal's lifetime window has a start: %v", d)
			}
		case ev.Kind == "limits":
			limits = true
			if l, _ := ev.Detail["limits"].([]any); len(l) != 1 || l[0].(map[string]any)["limit"] != "1.00 USD" {
				t.Errorf("the limits event's detail: %v", ev.Detail)
			}
		case ev.Kind == "reserve" && ev.Outcome == "ok":
			if a, _ := ev.Detail["amount"].(map[string]any); a["cost"] != "0.75 USD" || a["cost_micros"] != nil {
				t.Errorf("the reservation's detail: %v", ev.Detail)
			}
			if s, _ := ev.Detail["expires_at"].(string); !strings.HasSuffix(s, "Z") {
				t.Errorf("the reservation's expiry is not RFC 3339 UTC: %v", ev.Detail)
			}
		}
	}
	if !refused || !limits {
		t.Fatalf("audit --json lacks the refusal or the limits event:\n%s", out)
	}
	if strings.Contains(out, "1000000") || strings.Contains(out, "1970-01-01") {
		t.Errorf("audit --json shows micro-units or the epoch:\n%s", out)
	}
}

// TestErrorWording: an error line names what the user typed (the value,
// the flag), not the store's parameters; a negative value is refused as
// such, not taken for a flag; a file that is not a session store says so
// and exits 14 whatever the command, doctor included; a long argument is
// echoed cut to a readable length with its whole length stated.
func TestErrorWording(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--tool", "x", "--budget", "5").want(t, 0)
	e.run("retention", "set", "conversations_idle", "-5h").want(t, exitUsage).oneLineErr(t, "-5h: a negative value is refused")
	e.run("reserve", "s1", "--cost", "-1USD").want(t, exitUsage).oneLineErr(t, "--cost: -1USD: must not be negative")
	e.run("limits", "a", "--limit", "cost=-1USD").want(t, exitUsage).oneLineErr(t, "-1USD: must not be negative")
	e.run("gc", "--keep-last", "-1").want(t, exitUsage).oneLineErr(t, "--keep-last must not be negative")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"retention", "set", "messages_keep_last"}, "messages_keep_last takes a value: a number of messages"},
		{[]string{"retention", "set", "messages_keep_last", "x"}, `"x" is not a number of messages`},
		{[]string{"retention", "set", "size_budget", "0"}, "size_budget 0: must be positive"},
		{[]string{"retention", "set", "governed_ended", "1h", "--reads-count"}, "--reads-count: not taken by this kind"},
	} {
		r := e.run(c.args...).want(t, exitUsage).oneLineErr(t, c.want)
		for _, internal := range []string{"keep_last", "max_bytes", "reads_count", "max_age"} {
			if strings.Contains(strings.ReplaceAll(r.stderr, "messages_keep_last", ""), internal) {
				t.Errorf("%v: the message names the store's parameter %s: %s", c.args, internal, r.stderr)
			}
		}
	}

	long := strings.Repeat("x", 100_000)
	for _, args := range [][]string{{"import", long}, {"create", "--id", "i", "--agent", long, "--tool", "x", "--budget", "1"}, {"retention", "set", long, "1h"},
		// The lines written before a command runs: an unknown command or
		// flag, a malformed tenant, a key file that cannot be read.
		{long}, {"help", long}, {"--tenant", long, "list"}, {"--key-file", long, "list"}} {
		r := e.run(args...)
		if r.code == 0 || strings.Contains(r.stderr, long[:1000]) || len(r.stderr) > 1000 {
			t.Errorf("%s ...: exit %d, an error line of %d bytes: %.300s", args[0], r.code, len(r.stderr), r.stderr)
		}
		if strings.Contains(r.stderr, strings.Repeat("x", 20)) && !strings.Contains(r.stderr, "(100000 characters)") {
			t.Errorf("%s ...: the echo does not state the whole length: %.300s", args[0], r.stderr)
		}
	}
	if r := e.run("--"+long, "list"); len(r.stderr) > 1000 || !strings.Contains(r.stderr, "unknown flag --xxx") || !strings.Contains(r.stderr, "(100002 characters)") {
		t.Errorf("an unknown flag of 100,000 characters: an error line of %d bytes: %.300s", len(r.stderr), r.stderr)
	}

	f := newTestEnv(t)
	db, err := sql.Open("sqlite", f.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE users (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f.run("list").want(t, exitNotStore).oneLineErr(t, "is not a session store database (check --db)")
	if r := f.run("list"); strings.Contains(r.stderr, "goose") {
		t.Errorf("the error names goose's table: %s", r.stderr)
	}
	f.run("doctor").want(t, exitNotStore).oneLineErr(t, "is not a session store database")
	// doctor's help says so (it said only "Exits 1 when any check fails").
	if r := f.run("doctor", "--help").want(t, 0); !strings.Contains(humanize.OneLine(r.stdout), fmt.Sprintf("(%d when the file is not a session store", exitNotStore)) {
		t.Errorf("doctor --help does not quote exit status %d:\n%s", exitNotStore, r.stdout)
	}
}

// TestToolInputReadsAsItsCharacters: a tool input that json.Marshal
// wrote (\u003cb\u003e for <b>) reads in messages as the characters it
// holds.
func TestToolInputReadsAsItsCharacters(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	st := e.openStore()
	ctx := context.Background()
	input, _ := json.Marshal(map[string]string{"html": "<b>x</b> & y"})
	if _, err := st.Conversations().Save(ctx, store.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c1",
		store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{store.ToolUseBlock("call-1", "render", input)}},
		store.UserMessage("is <i>this</i> & that safe?")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := e.run("messages", "c1").want(t, 0)
	if !strings.Contains(r.stdout, `{"html":"<b>x</b> & y"}`) || strings.Contains(r.stdout, `\u003c`) {
		t.Errorf("messages:\n%s", r.stdout)
	}
	// JSON too, a message's text included (it read "is \u003ci\u003ethis..."),
	// and each line of a followed stream.
	if r := e.run("messages", "c1", "--json").want(t, 0); !strings.Contains(r.stdout, `"is <i>this</i> & that safe?"`) || strings.Contains(r.stdout, `\u00`) {
		t.Errorf("messages --json:\n%s", r.stdout)
	}
	// An agent event's data and a state value that an application's
	// json.Marshal wrote read as their characters in the tables.
	st = e.openStore()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	escaped := json.RawMessage(`{"html":"\u003cb\u003ex\u003c/b\u003e \u0026 y"}`)
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"k": escaped}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: "e1", Data: escaped}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, args := range [][]string{{"agents", "events", "app", "u", "s"}, {"agents", "state", "app", "u", "s"}} {
		if r := e.run(args...).want(t, 0); !strings.Contains(r.stdout, `{"html":"<b>x</b> & y"}`) || strings.Contains(r.stdout, `\u00`) {
			t.Errorf("%s:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	f := e.startFollow("messages", "c1", "--json", "--follow", "--from", "0")
	lines := strings.Join(waitLines(t, f.out.lines, 2, "followed messages"), "\n")
	f.stop(t)
	if !strings.Contains(lines, `"is <i>this</i> & that safe?"`) || strings.Contains(lines, `\u00`) {
		t.Errorf("messages --follow --json:\n%s", lines)
	}
}

// TestTextPlurals: counts of one read in the singular ("1 call per 1
// min", "state (1 key, merged)"; they said "1 calls", "1 keys").
func TestTextPlurals(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--tool", "x", "--budget", "5", "--rate-limit", "1").want(t, 0)
	if r := e.run("show", "s1").want(t, 0); !strings.Contains(r.stdout, "1 call per 1 min (") {
		t.Errorf("show:\n%s", r.stdout)
	}
	st := e.openStore()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(context.Background(), store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if r := e.run("agents", "show", "app", "u", "s").want(t, 0); !strings.Contains(r.stdout, "state (1 key, merged)") {
		t.Errorf("agents show:\n%s", r.stdout)
	}
}
