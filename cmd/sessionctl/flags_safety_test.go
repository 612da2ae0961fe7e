package main

// Issue 14, the command-line items: values reach the store verbatim (7),
// durations the store would round are refused (11), and --last 0 means
// zero messages while --last with --from or --limit is a usage error (12).

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
)

// TestUseToolVerbatim: "read_file " is not read_file. The CLI used to trim
// the name and charge read_file; now the name reaches the store as given
// and is refused (exit 2), and nothing is counted.
func TestUseToolVerbatim(t *testing.T) {
	t.Parallel()
	bothBackends(t, testUseToolVerbatim)
}

func testUseToolVerbatim(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--tool", "read_file", "--budget", "5").want(t, 0)
	for _, tool := range []string{"read_file ", " read_file", "read_file\t", "read_file, list_dir"} {
		r := e.run("use", "s", "--agent", "a", "--tool", tool)
		if r.code == exitOK {
			t.Errorf("use --tool %q was allowed: %s", tool, r.stdout)
		}
		r.want(t, exitUsage)
	}
	// The same for the allow-list of create: " read_file" is refused, not
	// stored as read_file.
	e.run("create", "--id", "s2", "--agent", "a", "--tool", " read_file", "--budget", "5").want(t, exitUsage)
	var v archive.GovernedSession
	if err := json.Unmarshal([]byte(e.run("show", "s", "--json").want(t, 0).stdout), &struct {
		Governed *archive.GovernedSession `json:"governed"`
	}{&v}); err != nil {
		t.Fatal(err)
	}
	if v.CallsMade != 0 {
		t.Fatalf("%d calls charged for refused tool names", v.CallsMade)
	}
	e.run("show", "s2").want(t, exitNotFound)
}

// TestDurationsBelowPrecision: durations the store would round (below its
// millisecond precision, or below the 1s minimum time limit) are usage
// errors naming the smallest allowed value, and create nothing.
func TestDurationsBelowPrecision(t *testing.T) {
	t.Parallel()
	bothBackends(t, testDurationsBelowPrecision)
}

func testDurationsBelowPrecision(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "keep", "--agent", "a", "--budget", "1").want(t, 0)
	before := fileState(t, e.db)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--time-limit", "500ms"}, "--time-limit 500ms is below the smallest allowed value, 1s"},
		{[]string{"--time-limit", "1500500us"}, "--time-limit 1.5005s is not a whole number of milliseconds, the precision the store keeps (the smallest allowed value is 1s)"},
		{[]string{"--rate-limit", "1", "--rate-window", "1ns"}, "--rate-window 1ns is below the smallest allowed value, 1ms"},
		{[]string{"--rate-limit", "1", "--rate-window", "1500us"}, "the smallest allowed value is 1ms"},
		{[]string{"--rate-window", "0s"}, "--rate-window 0s is below the smallest allowed value, 1ms"},
	} {
		args := append([]string{"create", "--id", "new", "--agent", "a", "--budget", "1"}, c.args...)
		e.run(args...).want(t, exitUsage).oneLineErr(t, c.want)
	}
	e.run("gc", "--older-than", "1us").want(t, exitUsage).oneLineErr(t, "--older-than 1µs is below the smallest allowed value, 1ms")
	sameFiles(t, before, fileState(t, e.db))
	// Whole milliseconds at or above the minimum are kept as given.
	r := e.run("create", "--id", "exact", "--agent", "a", "--budget", "1", "--time-limit", "1001ms",
		"--rate-limit", "1", "--rate-window", "1ms", "--json").want(t, 0)
	for _, want := range []string{`"time_limit_ms": 1001`, `"rate_window_ms": 1`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("create --json lacks %s:\n%s", want, r.stdout)
		}
	}
}

// TestMessagesLastZero: --last 0 prints no message (it printed them all),
// and --last does not go with --from or --limit (--from was ignored).
func TestMessagesLastZero(t *testing.T) {
	t.Parallel()
	bothBackends(t, testMessagesLastZero)
}

func testMessagesLastZero(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.convFixture()
	if r := e.run("messages", "c1", "--last", "0").want(t, 0); r.stdout != "no messages (the conversation has 5)\n" {
		t.Errorf("messages --last 0:\n%s", r.stdout)
	}
	var doc messagesJSON
	if err := json.Unmarshal([]byte(e.run("messages", "c1", "--last", "0", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Messages) != 0 || doc.MessageCount != 5 || doc.NextFrom != nil {
		t.Errorf("messages --last 0 --json: %+v", doc)
	}
	e.run("messages", "missing", "--last", "0").want(t, exitNotFound)
	for _, args := range [][]string{
		{"messages", "c1", "--last", "2", "--from", "1"},
		{"messages", "c1", "--last", "2", "--limit", "3"},
		{"messages", "c1", "--last", "0", "--from", "0"},
		{"messages", "c1", "--from", "1", "--last", "2"},
	} {
		e.run(args...).want(t, exitUsage).oneLineErr(t, "--last does not go with --from or --limit")
	}
	if err := json.Unmarshal([]byte(e.run("messages", "c1", "--last", "2", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Messages) != 2 || doc.Messages[0].Seq != 3 {
		t.Errorf("messages --last 2: %+v", doc.Messages)
	}
}
