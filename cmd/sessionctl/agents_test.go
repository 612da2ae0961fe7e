package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestGoldenAgents records the output of every agents action on the agent
// fixture, on both backends (one set of golden files).
func TestGoldenAgents(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGoldenAgents)
}

func testGoldenAgents(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.agentFixture()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"agents_list", []string{"agents"}},
		{"agents_list_page", []string{"agents", "list", "--limit", "2"}},
		{"agents_list_user_json", []string{"agents", "--app", "support", "--user", "ada", "--json"}},
		{"agents_show", []string{"agents", "show", "support", "ada", "s1", "--last", "3"}},
		{"agents_show_json", []string{"agents", "show", "support", "ada", "s1", "--last", "1", "--json"}},
		{"agents_events", []string{"agents", "events", "support", "ada", "s1", "--from", "3", "--limit", "4"}},
		{"agents_events_last_json", []string{"agents", "events", "support", "ada", "s1", "--last", "2", "--json"}},
		{"agents_events_invocation", []string{"agents", "events", "support", "ada", "s1", "--invocation", "inv-2"}},
		{"agents_state", []string{"agents", "state", "support", "ada", "s1"}},
		{"agents_state_json", []string{"agents", "state", "support", "dave", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(c.args...).want(t, 0)
			golden(t, c.name, e.normalize(r.stdout+r.stderr))
		})
	}
}

// TestAgentsListPaging: following the cursors page by page lists exactly
// the sessions of --all, in order, across applications.
func TestAgentsListPaging(t *testing.T) {
	t.Parallel()
	bothBackends(t, testAgentsListPaging)
}

func testAgentsListPaging(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.agentFixture()
	keys := func(doc agentListJSON) []string {
		var out []string
		for _, v := range doc.Items {
			out = append(out, v.App+"/"+v.User+"/"+v.Session)
		}
		return out
	}
	var all agentListJSON
	if err := json.Unmarshal([]byte(e.run("agents", "--all", "--limit", "1", "--json").want(t, 0).stdout), &all); err != nil {
		t.Fatal(err)
	}
	want := []string{"billing/ada/s1", "support/ada/s1", "support/ada/thread/42", "support/bob/s1"}
	if got := keys(all); !slices.Equal(got, want) || all.Next != "" {
		t.Fatalf("agents --all: %v (next %q), want %v", got, all.Next, want)
	}
	for _, limit := range []string{"1", "2", "3"} {
		var got []string
		args := []string{"agents", "--limit", limit, "--json"}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("--limit %s: paging does not end", limit)
			}
			var doc agentListJSON
			if err := json.Unmarshal([]byte(e.run(args...).want(t, 0).stdout), &doc); err != nil {
				t.Fatal(err)
			}
			got = append(got, keys(doc)...)
			if doc.Next == "" {
				break
			}
			args = []string{"agents", "--limit", limit, "--json", "--after", doc.Next}
		}
		if !slices.Equal(got, want) {
			t.Errorf("--limit %s pages: %v, want %v", limit, got, want)
		}
	}
	// Filters: one user of one application, and idleness (the fixture's
	// clock stands after its last write: every session is idle for 0s,
	// none for an hour).
	r := e.run("agents", "--app", "support", "--user", "bob", "--json").want(t, 0)
	if !strings.Contains(r.stdout, `"session": "s1"`) || strings.Contains(r.stdout, `"user": "ada"`) {
		t.Errorf("--user bob:\n%s", r.stdout)
	}
	if r := e.run("agents", "--idle", "1h").want(t, 0); r.stdout != "no agent sessions\n" {
		t.Errorf("--idle 1h: %q", r.stdout)
	}
	e.clock.Advance(2 * 3600e9)
	if r := e.run("agents", "--idle", "1h", "--json").want(t, 0); strings.Count(r.stdout, `"app"`) != 4 {
		t.Errorf("--idle 1h two hours later:\n%s", r.stdout)
	}
	// A cursor of another application is refused.
	e.run("agents", "--app", "support", "--after", `{"app":"billing"}`).want(t, exitUsage)
	e.run("agents", "--after", "nonsense").want(t, exitUsage)
}

// TestAgentsDelete: delete names what it removes, asks on a terminal,
// needs --yes otherwise, and removes the session with its events.
func TestAgentsDelete(t *testing.T) {
	t.Parallel()
	bothBackends(t, testAgentsDelete)
}

func testAgentsDelete(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.agentFixture()
	before := fileState(t, e.db)
	r := e.run("agents", "delete", "support", "ada", "s1").want(t, exitUsage)
	r.oneLineErr(t, "without --yes: stdin is not a terminal")
	r = e.runTerminal("n\n", "agents", "delete", "support", "ada", "s1").want(t, exitError)
	if !strings.Contains(r.stderr, "delete agent session s1 (app support, user ada) with 12 events and 3 session state keys? [y/N]") ||
		!strings.Contains(r.stderr, "nothing was deleted") {
		t.Errorf("declined delete: %q", r.stderr)
	}
	sameFiles(t, before, fileState(t, e.db))
	r = e.runTerminal("y\n", "agents", "delete", "support", "ada", "s1").want(t, 0)
	if r.stdout != "deleted agent session s1 (app support, user ada) with 12 events and 3 session state keys\n" {
		t.Errorf("delete: %q", r.stdout)
	}
	e.run("agents", "show", "support", "ada", "s1").want(t, exitNotFound).oneLineErr(t, "agent session s1 (app support, user ada): session not found")
	e.run("agents", "delete", "support", "ada", "s1", "--yes").want(t, exitNotFound)
	// The same id under another user and the user's state stay.
	e.run("agents", "show", "support", "bob", "s1").want(t, 0)
	if r := e.run("agents", "state", "support", "ada", "--json").want(t, 0); !strings.Contains(r.stdout, `"tier"`) {
		t.Errorf("user state after delete:\n%s", r.stdout)
	}
	e.run("agents", "delete", "billing", "ada", "s1", "--yes").want(t, 0)
}

// TestAgentsUsage: bad arguments and flags that do not apply are usage
// errors, before the database is opened.
func TestAgentsUsage(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"agents", "show", "a", "u"}, "expected APP USER SESSION"},
		{[]string{"agents", "show", "a", "u", "s", "x"}, "expected APP USER SESSION"},
		{[]string{"agents", "state"}, "expected APP [USER [SESSION]]"},
		{[]string{"agents", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"agents", "show", "a", "", "s"}, "user: must not be empty"},
		{[]string{"agents", "list", "--follow"}, "--follow does not apply to agents list"},
		{[]string{"agents", "show", "a", "u", "s", "--yes"}, "--yes does not apply to agents show"},
		{[]string{"agents", "events", "a", "u", "s", "--last", "2", "--from", "3"}, "--last does not go with --from or --limit"},
		{[]string{"agents", "events", "a", "u", "s", "--from", "0"}, "--from must be at least 1"},
		{[]string{"agents", "events", "a", "u", "s", "--follow", "--limit", "3"}, "--follow does not go with --limit"},
		{[]string{"agents", "--limit", "0"}, "--limit must be between 1 and 1000"},
	} {
		e.run(c.args...).want(t, exitUsage).oneLineErr(t, c.msg)
	}
}

// runTerminal runs sessionctl with stdin as a terminal that answers
// answer.
func (e *testEnv) runTerminal(answer string, args ...string) result {
	e.t.Helper()
	yes := true
	return e.runWith(func(g *globals) { g.terminalStdin = &yes }, answer, args...)
}
