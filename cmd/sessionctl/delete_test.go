package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// TestDelete: delete removes a conversation, or a runtime session with
// its uploads and conversation, after a dry run and a confirmation; it
// refuses without --yes when stdin is not a terminal and names governed
// sessions as close's and cleanup's.
func TestDelete(t *testing.T) {
	t.Parallel()
	bothBackends(t, testDelete)
}

func testDelete(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.convFixture()
	e.rtFixture()
	e.run("create", "--id", "g1", "--agent", "a", "--budget", "1").want(t, 0)
	// The runtime session r1 has a conversation of its own id too.
	st := e.openStore()
	if _, err := st.Conversations().Save(context.Background(), store.NewConversation("r1")); err != nil {
		t.Fatal(err)
	}
	st.Close()

	before := fileState(t, e.db)
	r := e.run("delete", "c1", "--dry-run").want(t, 0)
	if r.stdout != "would delete conversation c1 with 5 messages\n" {
		t.Errorf("dry run: %q", r.stdout)
	}
	e.run("delete", "c1").want(t, exitUsage).oneLineErr(t, "refusing to delete conversation c1 with 5 messages without --yes")
	e.runTerminal("no\n", "delete", "c1").want(t, exitError)
	sameFiles(t, before, fileState(t, e.db))
	r = e.runTerminal("y\n", "delete", "c1").want(t, 0)
	if r.stdout != "deleted conversation c1 with 5 messages\n" || !strings.Contains(r.stderr, "delete conversation c1 with 5 messages? [y/N]") {
		t.Errorf("delete c1: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	e.run("messages", "c1").want(t, exitNotFound)
	e.run("traces", "c1").want(t, exitNotFound)
	e.run("delete", "c1", "--yes").want(t, exitNotFound)

	// --facet conversations keeps the runtime session.
	r = e.run("delete", "r1", "--facet", "conversations", "--yes", "--json").want(t, 0)
	if !strings.Contains(r.stdout, `"conversation": true`) || !strings.Contains(r.stdout, `"runtime_session": false`) {
		t.Errorf("delete --facet conversations --json: %s", r.stdout)
	}
	e.run("uploads", "r1").want(t, 0)
	r = e.run("delete", "r1", "--yes").want(t, 0)
	if r.stdout != "deleted runtime session r1 with 2 uploads\n" {
		t.Errorf("delete r1: %q", r.stdout)
	}
	e.run("uploads", "r1").want(t, exitNotFound)
	e.run("show", "r2").want(t, 0)

	e.run("delete", "g1", "--yes").want(t, exitNotFound).oneLineErr(t, "a governed session is removed by close, then cleanup")
	e.run("delete", "r2", "--facet", "bogus").want(t, exitUsage)
	e.run("show", "g1").want(t, 0)
}
