package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// hostile holds what a terminal must never receive raw: a window-title
// sequence, a screen clear, a C1 CSI (U+009B), a right-to-left override
// and a newline that would forge a line of output.
const hostile = "a\x1b]0;pwned\x07b\x1b[2J\u009b31mc\u202ed\nhealthy\tx\x7f"

// safeForTerminal reports the first rune of s that a terminal must not
// receive: control characters other than tab and newline, DEL, C1
// controls, bidirectional overrides, bytes that are not UTF-8.
func safeForTerminal(s string) (bad rune, ok bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return rune(s[i]), false
		}
		if r != '\t' && r != '\n' && humanize.UnsafeRune(r) {
			return r, false
		}
		i += n
	}
	return 0, true
}

// TestHumanOutputEscapesControls: stored data with escape sequences, C1
// controls, bidi overrides, tabs and newlines is printed escaped in every
// table and line, while --json output carries it exactly.
func TestHumanOutputEscapesControls(t *testing.T) {
	t.Parallel()
	bothBackends(t, testHumanOutputEscapesControls)
}

func testHumanOutputEscapesControls(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	ctx := context.Background()
	// Session ids refuse C0 controls, but C1 controls and bidi overrides are
	// valid id characters; agent names refuse every control, not bidi marks.
	id := "s\u009b2J\u202e"
	e.run("create", "--id", id, "--agent", "ag\u202e", "--tool", "read_file", "--budget", "3", "--intent", hostile).want(t, 0)
	st := e.openStore()
	c := store.NewConversation(id)
	c.Config.Name, c.Config.Workspace, c.ModelName = hostile, hostile, "m\x1b[5m"
	c.Messages = []store.Message{store.UserMessage(hostile), {Role: "tool", Content: []store.ContentBlock{store.ToolResultBlock("t1", hostile, true)}}}
	if _, err := st.Conversations().Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := st.Conversations().PutArtifacts(ctx, id, store.Artifact{URI: "u\u009b1m", ToolName: "t\u009b", Content: hostile}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendTraces(ctx, id, store.TraceEvent{Kind: store.TraceToolExecution, Name: hostile}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "al\u009b", WorkspaceDir: hostile,
		ChatMode: store.ChatModeChat, OwnerID: "o\u202e"}); err != nil {
		t.Fatal(err)
	}
	model := "m\u009b2J\u202e"
	if _, err := st.Runtime().SetOverrides(ctx, id, store.Overrides{Model: &model}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Runtime().PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "r\u009b", Marker: hostile,
		WorkspacePath: hostile, Content: []byte(hostile)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"list"}, {"list", "--facet", "conversations"}, {"list", "--facet", "runtime"},
		{"show", id}, {"messages", id}, {"artifacts", id}, {"traces", id}, {"uploads", id},
		{"use", id, "--agent", "other", "--tool", "read_file"}, {"show", id + "\u009bmissing"},
	} {
		r := e.run(args...)
		for _, out := range []string{r.stdout, r.stderr} {
			if bad, ok := safeForTerminal(out); !ok {
				t.Errorf("sessionctl %q printed %U raw:\n%q", args, bad, out)
			}
		}
		if r.code == exitOK && !strings.Contains(r.stdout, `\u009b`) {
			t.Errorf("sessionctl %q: the escaped id or data is missing:\n%s", args, r.stdout)
		}
	}
	// Escaped, not dropped: the table of messages shows the sequences
	// spelled out, on one line per message.
	r := e.run("messages", id, "--width", "200").want(t, 0)
	if !strings.Contains(r.stdout, `a\x1b]0;pwned\x07b\x1b[2J\u009b31mc\u202ed healthy x\x7f`) {
		t.Errorf("messages table:\n%s", r.stdout)
	}
	if n := strings.Count(r.stdout, "\n"); n != 3 {
		t.Errorf("messages table has %d lines, want a header and 2 messages:\n%s", n, r.stdout)
	}
	// JSON is unaffected: the document holds the data exactly.
	var doc messagesJSON
	if err := json.Unmarshal([]byte(e.run("messages", id, "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Messages[0].Text(); got != hostile {
		t.Errorf("messages --json: %q, want %q", got, hostile)
	}
	var show showJSON
	if err := json.Unmarshal([]byte(e.run("show", id, "--json").want(t, 0).stdout), &show); err != nil {
		t.Fatal(err)
	}
	if show.Governed.DeclaredIntent != hostile || show.ID != id {
		t.Errorf("show --json: %q %q", show.ID, show.Governed.DeclaredIntent)
	}
	// Content printed "as it is" into a pipe or file stays exact.
	if r := e.run("artifacts", id, "--uri", "u\u009b1m").want(t, 0); r.stdout != hostile {
		t.Errorf("artifacts --uri: %q", r.stdout)
	}
}
