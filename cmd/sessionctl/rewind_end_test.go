package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// TestRewindConversationPastItsEnd: rewinding a conversation past its
// last message is a usage error (exit 2) naming --to's value, as for
// agent sessions and fork --at; at its last message it supersedes
// nothing.
func TestRewindConversationPastItsEnd(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	st := e.openStore()
	c := store.NewConversation("conv")
	for _, s := range []string{"a", "b", "c", "d"} {
		c.Messages = append(c.Messages, store.UserMessage(s))
	}
	if _, err := st.Conversations().Save(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := e.run("rewind", "conv", "--to", "99").want(t, exitUsage)
	if !strings.Contains(r.stderr, "to") {
		t.Fatalf("stderr does not name to:\n%s", r.stderr)
	}
	out := e.run("rewind", "conv", "--to", "3").want(t, 0).stdout
	if !strings.Contains(out, "0 messages superseded") {
		t.Fatalf("rewind to the last message:\n%s", out)
	}
}
