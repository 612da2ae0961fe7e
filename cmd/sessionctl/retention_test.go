package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/store"
)

// TestSweepDryRunOnDemo: on the demo database, sweep --dry-run shows
// what each of the demo's policies would remove, per facet, and changes
// nothing; docs/retention.md shows this output (and runs it).
func TestSweepDryRunOnDemo(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("demo").want(t, 0)
	before := fileState(t, e.db)
	r := e.run("sweep", "--dry-run").want(t, 0)
	sameFiles(t, before, fileState(t, e.db))
	golden(t, "sweep_dry_run_demo", e.normalize(r.stdout))
	for _, p := range demo.Policies() {
		if !strings.Contains(r.stdout, string(p.Kind)) {
			t.Errorf("the dry run does not show %s:\n%s", p.Kind, r.stdout)
		}
	}
}

// TestRetentionCommands: retention set/show/remove, hold and release,
// and sweep remove what is due, keep what is held, and log the sweep.
func TestRetentionCommands(t *testing.T) {
	t.Parallel()
	bothBackends(t, testRetentionCommands)
}

func testRetentionCommands(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "g1", "--agent", "a", "--tool", "x", "--budget", "1").want(t, 0)
	e.run("create", "--id", "g2", "--agent", "a", "--tool", "x", "--budget", "1").want(t, 0)
	e.run("close", "g1", "g2").want(t, 0)
	e.run("retention", "set", "nope", "1h").want(t, exitUsage)
	e.run("retention", "set", "governed_ended").want(t, exitUsage)
	e.run("retention", "set", "orphan_state", "1h").want(t, exitUsage)
	e.run("retention", "set", "size_budget", "lots").want(t, exitUsage)
	if r := e.run("retention", "set", "governed_ended", "1h").want(t, 0); r.stdout != "set governed_ended: after 1 h\n" {
		t.Errorf("set: %q", r.stdout)
	}
	e.run("retention", "set", "size_budget", "2GiB").want(t, 0)
	e.run("hold", "governance", "g2", "--reason", "audit").want(t, 0)
	e.run("hold", "agent_sessions", "only-two").want(t, exitUsage)
	var shown retentionJSON
	if err := json.Unmarshal([]byte(e.run("retention", "--json").want(t, 0).stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Policies) != 2 || shown.Policies[1].MaxBytes != 2<<30 || len(shown.Holds) != 1 || shown.Holds[0].Reason != "audit" {
		t.Fatalf("retention --json: %+v", shown)
	}
	// Durations are whole milliseconds in max_age_ms (not Go's
	// nanoseconds in max_age); a policy without an age has none.
	if p := shown.Policies[0]; p.MaxAgeMS == nil || *p.MaxAgeMS != 3_600_000 || shown.Policies[1].MaxAgeMS != nil {
		t.Errorf("retention --json: the ages %+v", shown.Policies)
	}
	if r := e.run("retention", "--json").want(t, 0); strings.Contains(r.stdout, `"max_age"`) || !strings.Contains(r.stdout, `"max_age_ms": 3600000`) {
		t.Errorf("retention --json:\n%s", r.stdout)
	}
	e.clock.Advance(time.Hour)
	var rep store.SweepReport
	if err := json.Unmarshal([]byte(e.run("sweep", "--json").want(t, 0).stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if k, _ := rep.Kind(store.PolicyGovernedEnded); k.Sessions != 1 || k.Held != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
	e.run("show", "g1").want(t, exitNotFound)
	e.run("show", "g2").want(t, 0)
	if r := e.run("hold", "release", "governance", "g2").want(t, 0); r.stdout != "released governance g2\n" {
		t.Errorf("release: %q", r.stdout)
	}
	r := e.run("sweep").want(t, 0)
	if !strings.Contains(r.stdout, "removed 1 session ") {
		t.Errorf("second sweep:\n%s", r.stdout)
	}
	e.run("show", "g2").want(t, exitNotFound)
	if r := e.run("retention").want(t, 0); !strings.Contains(r.stdout, "last sweeps: 2") {
		t.Errorf("retention show:\n%s", r.stdout)
	}
	if r := e.run("retention", "remove", "size_budget").want(t, 0); r.stdout != "removed the size_budget policy\n" {
		t.Errorf("remove: %q", r.stdout)
	}
}

// TestHoldSeveralIDs (issue 38): hold FACET ID... holds every id its
// synopsis promises (it refused a second one), release releases each, and
// a usage error points to "sessionctl hold --help" (it named "hold add",
// which does not exist).
func TestHoldSeveralIDs(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("migrate", "up").want(t, 0)
	if r := e.run("hold", "conversations", "c1", "c2", "--reason", "legal").want(t, 0); r.stdout != "held conversations c1\nheld conversations c2\n" {
		t.Fatalf("hold c1 c2: %q", r.stdout)
	}
	var held struct{ Holds []store.Hold }
	if err := json.Unmarshal([]byte(e.run("hold", "list", "--json").want(t, 0).stdout), &held); err != nil || len(held.Holds) != 2 || held.Holds[1].Reason != "legal" {
		t.Fatalf("hold list: %+v %v", held, err)
	}
	var released struct {
		Released []store.SessionRef `json:"released"`
		NotHeld  []store.SessionRef `json:"not_held"`
	}
	if err := json.Unmarshal([]byte(e.run("hold", "release", "conversations", "c1", "c3", "--json").want(t, 0).stdout), &released); err != nil ||
		len(released.Released) != 1 || released.Released[0].ID != "c1" || len(released.NotHeld) != 1 || released.NotHeld[0].ID != "c3" {
		t.Fatalf("hold release c1 c3: %+v %v", released, err)
	}
	// A bad id among several holds none.
	e.run("hold", "conversations", "c4", "").want(t, exitUsage)
	if r := e.run("hold", "list").want(t, 0); !strings.HasPrefix(r.stdout, "1 hold\n") {
		t.Fatalf("after a refused hold: %q", r.stdout)
	}
	for _, args := range [][]string{{"hold", "governance"}, {"hold", "release", "--reason", "x", "governance", "g"}} {
		r := e.run(args...).want(t, exitUsage)
		if !strings.Contains(r.stderr, "(see sessionctl hold --help)") || strings.Contains(r.stderr, "hold add") {
			t.Errorf("%q: %s", args, r.stderr)
		}
	}
	// A word that is not a facet is named, with the facets (it said
	// "invalid input: facet: not a facet with sessions"); the help of
	// --reason names no "add" action (there is none to type).
	for args, want := range map[string]string{
		"hold conversation c1":     `"conversation" is not a facet (one of governance, runtime, conversations, agent_sessions) (did you mean conversations?)`,
		"hold add conversations c": `"add" is not a facet (one of governance, runtime, conversations, agent_sessions)`,
	} {
		if r := e.run(strings.Fields(args)...).want(t, exitUsage); !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %s", args, r.stderr)
		}
	}
	if r := e.run("hold", "--help").want(t, 0); strings.Contains(r.stdout, "add:") || !strings.Contains(r.stdout, "--reason TEXT  hold FACET ID...: why") {
		t.Errorf("hold --help: %s", r.stdout)
	}
}
