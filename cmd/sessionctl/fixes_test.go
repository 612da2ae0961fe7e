package main

// Issue 24's CLI bugs, each pinned by a test that failed before its fix.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// TestSettleMissingConversationNamesIt: settle --conversation of a
// conversation that does not exist says the conversation is missing, not
// the session, still with the not-found exit status.
func TestSettleMissingConversationNamesIt(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "lim", "--agent", "spender", "--tool", "*", "--budget", "9", "--limit", "cost=1USD").want(t, 0)
	e.run("reserve", "lim", "--cost", "0.5USD", "--request-id", "q").want(t, 0)
	r := e.run("settle", "lim", "q", "--cost", "0.1USD", "--conversation", "nope").want(t, exitNotFound)
	r.oneLineErr(t, "conversation not found: nope")
	if strings.Contains(r.stderr, "session not found") {
		t.Errorf("stderr blames the session: %q", r.stderr)
	}
	// The reservation is still open: settling into a real target works.
	e.run("settle", "lim", "q", "--cost", "0.1USD").want(t, 0)
}

// TestCloseHelpMatchesExitStatus: close --help states the exit status a
// second close really has.
func TestCloseHelpMatchesExitStatus(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	e.run("close", "s").want(t, 0)
	e.run("close", "s").want(t, exitClosed)
	help := e.run("close", "--help").want(t, 0)
	want := fmt.Sprintf("already closed is an error (exit status %d)", exitClosed)
	if !strings.Contains(strings.Join(strings.Fields(help.stdout), " "), want) {
		t.Errorf("close --help does not say %q:\n%s", want, help.stdout)
	}
}

// TestLimitsRefusesAMissingDatabase: limits --limit and --clear change an
// existing store; on a mistyped --db they say the file is missing and
// create nothing, like the other commands that do not create a store.
func TestLimitsRefusesAMissingDatabase(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, args := range [][]string{
		{"limits", "a"},
		{"limits", "a", "--limit", "cost=1USD/day"},
		{"limits", "a", "--clear"},
	} {
		e.run(args...).want(t, exitError).oneLineErr(t, "database file "+e.db+" does not exist")
	}
	if entries, err := os.ReadDir(e.dir); err != nil || len(entries) != 0 {
		t.Fatalf("limits on a missing database left %v (%v)", entries, err)
	}
	// On an existing store they work.
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	e.run("limits", "a", "--limit", "cost=1USD/day").want(t, 0)
	e.run("limits", "a", "--clear").want(t, 0)
}

// TestFollowResetIsOneSentence: the error that ends a follow whose stream
// was rewritten is one sentence naming what was followed, without the
// feed's internal epochs and without repeating itself; it keeps the
// feed-reset exit status.
func TestFollowResetIsOneSentence(t *testing.T) {
	t.Parallel()
	err := followErr("conversation c1", &store.FeedResetError{Stream: "messages", ID: "c1", Epoch: 1, Current: 2})
	want := "conversation c1 was rewritten while followed; run the command again to reload it"
	if err.Error() != want {
		t.Errorf("followErr = %q, want %q", err, want)
	}
	if !errors.Is(err, store.ErrFeedReset) || exitFor(err) != exitFeedReset {
		t.Errorf("followErr lost the feed reset: exit %d", exitFor(err))
	}
	var out bytes.Buffer
	g := &globals{stderr: &out}
	g.report("messages", g.fail("messages", withID("c1", err)))
	if got := out.String(); got != "sessionctl messages: "+want+"\n" {
		t.Errorf("printed %q", got)
	}
}

// TestFollowMissingRunNamesIt: runs --follow --run of a run the
// conversation does not have says which run is missing, before printing
// anything.
func TestFollowMissingRunNamesIt(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.convFixture()
	r := e.run("runs", "c1", "--follow", "--run", "nope").want(t, exitNotFound)
	if r.stdout != "" {
		t.Errorf("printed %q before the error", r.stdout)
	}
	r.oneLineErr(t, "run nope of conversation c1 not found")
	if strings.Contains(r.stderr, "session c1") || strings.Contains(r.stderr, "session not found") {
		t.Errorf("stderr blames the session: %q", r.stderr)
	}
	r = e.run("runs", "nope", "--follow", "--run", "run-1").want(t, exitNotFound)
	if r.stdout != "" {
		t.Errorf("printed %q before the error", r.stdout)
	}
	r.oneLineErr(t, "nope")
}

// TestAuditPruneOlderThanZero: --older-than 0s cuts every agent's chain at
// its newest checkpoint made so far (a session's chain goes whole with its
// session); a negative duration, both flags or
// neither are usage errors; the help shows no default that is not one.
func TestAuditPruneOlderThanZero(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--tool", "*", "--budget", "9").want(t, 0)
	e.run("use", "s", "--tool", "x").want(t, 0)
	e.run("audit", "checkpoint").want(t, 0)
	e.clock.Advance(time.Second)
	e.run("use", "s", "--tool", "x").want(t, 0)
	r := e.run("audit", "prune", "--older-than", "0s", "--json").want(t, 0)
	var got struct {
		Removed int64 `json:"removed_events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Removed != 1 {
		t.Fatalf("prune --older-than 0s: %q (%v), want 1 event removed (the create, in the agent's chain)", r.stdout, err)
	}
	e.run("audit", "verify").want(t, 0)
	e.run("audit", "prune").want(t, exitUsage).oneLineErr(t, "give one of --before and --older-than")
	e.run("audit", "prune", "--older-than", "0s", "--before", "2026-01-01T00:00:00Z").want(t, exitUsage)
	e.run("audit", "prune", "--older-than", "-1s").want(t, exitUsage)
	help := e.run("audit", "--help").want(t, 0).stdout
	if strings.Contains(help, "(default 0s)") {
		t.Errorf("audit --help shows a default for --older-than that prune does not apply:\n%s", help)
	}
}

// TestShowStaleTurn: show says when a running turn's lease lapses, and
// that the turn is stale once it has lapsed (its process died), in the
// table and in --json; list's turn column says stale too.
func TestShowStaleTurn(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.rtFixture() // r1's turn runs; the store that began it is closed
	r := e.run("show", "r1").want(t, 0)
	if !strings.Contains(r.stdout, "#1 running, started 2026-01-02 03:04:05Z by ") ||
		!strings.Contains(r.stdout, ", lease until 2026-01-02 03:04:35Z") || strings.Contains(r.stdout, "stale") {
		t.Errorf("show of a live turn:\n%s", r.stdout)
	}
	e.clock.Advance(store.DefaultTurnLease + time.Second)
	r = e.run("show", "r1").want(t, 0)
	if !strings.Contains(r.stdout, "#1 stale (its process stopped renewing it)") ||
		!strings.Contains(r.stdout, ", lease lapsed 2026-01-02 03:04:35Z") {
		t.Errorf("show of a stale turn:\n%s", r.stdout)
	}
	var doc struct {
		Runtime struct {
			Turn map[string]any `json:"turn"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(e.run("show", "r1", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runtime.Turn["stale"] != true || doc.Runtime.Turn["lease_expires_at"] != "2026-01-02T03:04:35Z" || doc.Runtime.Turn["running"] != true {
		t.Errorf("show --json turn = %v", doc.Runtime.Turn)
	}
	if r := e.run("list", "--facet", "runtime").want(t, 0); !strings.Contains(r.stdout, "#1 stale") {
		t.Errorf("list does not show the stale turn:\n%s", r.stdout)
	}
}
