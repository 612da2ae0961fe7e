package main

// The status line of export, import, gc and backup (progress.go): drawn on
// stderr when it is a terminal (injected through globals), never on a file
// or a pipe, and cleared before the summary or an error.

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
)

const clearLine = "\r\033[K"

// runOnTerminal runs sessionctl with stderr as a terminal (stdout too when
// stdoutTerm), the status line redrawn on every update.
func (e *testEnv) runOnTerminal(stdoutTerm bool, args ...string) result {
	e.t.Helper()
	yes := true
	return e.runWith(func(g *globals) {
		g.terminalStderr = &yes
		g.terminalStdout = &stdoutTerm
		g.progressEvery = -1
	}, "", args...)
}

// statusLines splits what a terminal stderr received into the status
// lines drawn and the rest (what remains on the screen once every status
// line is erased). It fails the test if a status line is left on the
// screen: the last one must be cleared before anything else is printed
// and before the command ends.
func statusLines(t *testing.T, stderr string) (lines []string, rest string) {
	t.Helper()
	segs := strings.Split(stderr, clearLine)
	rest = segs[0]
	for i, s := range segs[1:] {
		status, after, hasNL := strings.Cut(s, "\n")
		if !hasNL {
			if s != "" {
				lines = append(lines, s)
				if i == len(segs)-2 {
					t.Errorf("status line %q left on the screen (stderr %q)", s, stderr)
				}
			}
			continue
		}
		// Text with a new line after a clear is ordinary output; a status
		// line must have been cleared before it.
		rest += status + "\n" + after
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > statusline.Width {
			t.Errorf("status line of %d runes, wider than %d: %q", n, statusline.Width, l)
		}
	}
	return lines, rest
}

// noStatus fails unless out holds no trace of a status line.
func noStatus(t *testing.T, what, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\r\033") {
		t.Errorf("%s holds a status line on a non-terminal: %q", what, out)
	}
}

// hasLine fails unless one of lines starts with prefix and contains each
// of parts.
func hasLine(t *testing.T, lines []string, prefix string, parts ...string) {
	t.Helper()
next:
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return
	}
	t.Errorf("no status line %q... with %q among:\n%s", prefix, parts, strings.Join(lines, "\n"))
}

// TestProgressUnit: the status line is never started when stderr is not
// a terminal (its drawing: package statusline's tests).
func TestProgressUnit(t *testing.T) {
	t.Parallel()
	var errb bytes.Buffer
	g := &globals{stderr: &errb}
	if g.startProgress(true) != nil || g.status != nil {
		t.Error("progress started on a buffer")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g = &globals{stderr: termout.NewWriter(f)}
	if g.startProgress(true) != nil {
		t.Error("progress started on a file")
	}
	yes := true
	g = &globals{stderr: &errb, terminalStderr: &yes}
	if g.startProgress(false) != nil {
		t.Error("progress started though the command turned it off")
	}
	if p := g.startProgress(true); p == nil || g.status != p || p.Interval() != statusline.Every {
		t.Errorf("progress on a terminal: %+v", p)
	}
	// On a real terminal, the line is drawn; /dev/tty exists only with a
	// controlling terminal, so this part runs where there is one.
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if (&globals{stderr: tty}).startProgress(true) == nil {
			t.Error("progress is off on a terminal")
		}
	}
}

// TestProgressImport: importing shows the file and the records and bytes
// done on a terminal, cleared before the summary; the summary is the same
// as without a terminal, and without one stderr stays empty.
func TestProgressImport(t *testing.T) {
	t.Parallel()
	src := newTestEnv(t)
	src.fixture()
	src.convFixture()
	a := filepath.Join(src.dir, "a.json")
	b := filepath.Join(src.dir, "b.json")
	src.run("export", "t-active", "--output", a).want(t, 0)
	src.run("export", "c1", "--output", b).want(t, 0)

	plain := newTestEnv(t).run("import", a, b).want(t, 0)
	noStatus(t, "stderr", plain.stderr)
	noStatus(t, "stdout", plain.stdout)

	r := newTestEnv(t).runOnTerminal(false, "import", a, b).want(t, 0)
	lines, rest := statusLines(t, r.stderr)
	if rest != "" {
		t.Errorf("stderr besides the status line: %q", rest)
	}
	if r.stdout != plain.stdout {
		t.Errorf("summary on a terminal %q, without %q", r.stdout, plain.stdout)
	}
	hasLine(t, lines, "importing 1/2 a.json")
	hasLine(t, lines, "importing 1/2 a.json: 1 record, ", " of ", " read")
	hasLine(t, lines, "importing 2/2 b.json: 1 record, ", " read")

	r = newTestEnv(t).runOnTerminal(false, "import", "--dry-run", "--json", a).want(t, 0)
	lines, _ = statusLines(t, r.stderr)
	hasLine(t, lines, "checking a.json: 1 record, ")
	noStatus(t, "stdout", r.stdout)

	// A failing file: the line is cleared before the error.
	bad := filepath.Join(src.dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "sessionctl-export", "version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = newTestEnv(t).runOnTerminal(false, "import", a, bad)
	if r.code == 0 {
		t.Fatal("import of a bad file succeeded")
	}
	_, rest = statusLines(t, r.stderr)
	if !strings.HasPrefix(rest, "sessionctl import: "+bad) || strings.Count(rest, "\n") != 1 {
		t.Errorf("error after the status line: %q", rest)
	}
}

// TestProgressExport: export shows the section and the items and bytes
// written; the document is the same with and without a terminal; no line
// is drawn when the document itself goes to a terminal, nor on a
// non-terminal stderr.
func TestProgressExport(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	e.convFixture()

	plain := e.run("export").want(t, 0)
	noStatus(t, "stderr", plain.stderr)
	r := e.runOnTerminal(false, "export").want(t, 0)
	if r.stdout != plain.stdout {
		t.Error("the document differs when stderr is a terminal")
	}
	lines, rest := statusLines(t, r.stderr)
	if rest != "" {
		t.Errorf("stderr besides the status line: %q", rest)
	}
	hasLine(t, lines, "exporting governed sessions: 0 done, ", " B written")
	hasLine(t, lines, "exporting governed sessions: 4 done, ", " KiB written")
	hasLine(t, lines, "exporting conversations: 3 done, ", " KiB written")
	hasLine(t, lines, "exporting the end of the document: ")

	// The document on a terminal: no status line among it.
	r = e.runOnTerminal(true, "export").want(t, 0)
	if r.stderr != "" {
		t.Errorf("stderr with the document on a terminal: %q", r.stderr)
	}

	// To a file: the line is cleared before the summary, which is the
	// same as without a terminal.
	out := filepath.Join(e.dir, "x.json")
	plain = e.run("export", "t-active", "c1", "--output", out).want(t, 0)
	noStatus(t, "stderr", plain.stderr)
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	r = e.runOnTerminal(true, "export", "t-active", "c1", "--output", out).want(t, 0)
	lines, rest = statusLines(t, r.stderr)
	if rest != plain.stderr {
		t.Errorf("summary on a terminal %q, without %q", rest, plain.stderr)
	}
	hasLine(t, lines, "exporting: checking the ids")
	hasLine(t, lines, "exporting governed sessions: 1 done, ")
	hasLine(t, lines, "exporting conversations: 1 done, ")

	// An error: cleared before it.
	r = e.runOnTerminal(false, "export", "t-active", "--output", out).want(t, exitError)
	if _, rest = statusLines(t, r.stderr); !strings.HasPrefix(rest, "sessionctl export: ") {
		t.Errorf("error after the status line: %q", rest)
	}
}

// TestProgressGC: gc shows its steps (the check, the deletions, the trim,
// the idle agent sessions, the checkpoint) and what they did; its output
// is the same with and without a terminal.
func TestProgressGC(t *testing.T) {
	t.Parallel()
	envs := func() (*testEnv, *testEnv) {
		a, b := newTestEnv(t), newTestEnv(t)
		for _, e := range []*testEnv{a, b} {
			e.convFixture()
			e.agentFixture()
		}
		return a, b
	}
	args := []string{"gc", "--older-than", "720h", "--keep-last", "2", "--vacuum"}
	plainEnv, termEnv := envs()
	plain := plainEnv.run(args...).want(t, 0)
	noStatus(t, "stderr", plain.stderr)
	r := termEnv.runOnTerminal(true, args...).want(t, 0)
	// What the vacuum gives back is a property of each file, not of the
	// terminal: two fixtures written at different instants need not fill
	// their pages alike (a CI run saw 12.0 KiB against 8.0 KiB).
	if sameButVacuum(r.stdout) != sameButVacuum(plain.stdout) {
		t.Errorf("output on a terminal:\n%s\nwithout:\n%s", r.stdout, plain.stdout)
	}
	lines, rest := statusLines(t, r.stderr)
	if rest != "" {
		t.Errorf("stderr besides the status line: %q", rest)
	}
	hasLine(t, lines, "gc: checking the database before changing it")
	hasLine(t, lines, "gc: deleting conversations not updated since ", ": 1 deleted")
	hasLine(t, lines, "gc: trimming every conversation to its last 2 messages", ": 2 trimmed")
	hasLine(t, lines, "gc: counting idle agent sessions: ", " read, ")
	hasLine(t, lines, "gc: rewriting the database file (vacuum), then checkpointing the WAL")

	e, _ := envs()
	args = []string{"gc", "--older-than", "720h", "--keep-last", "2", "--dry-run", "--json"}
	plain = e.run(args...).want(t, 0)
	r = e.runOnTerminal(true, args...).want(t, 0)
	if r.stdout != plain.stdout {
		t.Errorf("JSON on a terminal:\n%s\nwithout:\n%s", r.stdout, plain.stdout)
	}
	noStatus(t, "stdout", r.stdout)
	lines, _ = statusLines(t, r.stderr)
	hasLine(t, lines, "gc: counting conversations (dry run): conversations_idle ", " found")
	for _, l := range lines {
		if strings.Contains(l, "checking the database") || strings.Contains(l, "WAL") {
			t.Errorf("a dry run shows %q", l)
		}
	}
}

// TestProgressBackup: backup shows its steps and the pages and bytes
// copied of the total; its summary is the same with and without a
// terminal.
func TestProgressBackup(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	e.convFixture()
	plain := e.run("backup", filepath.Join(e.dir, "plain.db")).want(t, 0)
	noStatus(t, "stderr", plain.stderr)
	r := e.runOnTerminal(true, "backup", filepath.Join(e.dir, "term.db")).want(t, 0)
	if want := strings.ReplaceAll(plain.stdout, "plain.db", "term.db"); r.stdout != want {
		t.Errorf("summary on a terminal %q, without %q", r.stdout, want)
	}
	lines, rest := statusLines(t, r.stderr)
	if rest != "" {
		t.Errorf("stderr besides the status line: %q", rest)
	}
	hasLine(t, lines, "backup: counting the rows of every table")
	hasLine(t, lines, "backup: copying the pages")
	hasLine(t, lines, "backup: copied ", " pages, ", " KiB of ", "(100%)")
	hasLine(t, lines, "backup: checking the copy")
	hasLine(t, lines, "backup: syncing the copy")

	r = e.runOnTerminal(false, "backup", "--json", filepath.Join(e.dir, "json.db")).want(t, 0)
	noStatus(t, "stdout", r.stdout)
	if lines, _ = statusLines(t, r.stderr); len(lines) == 0 {
		t.Error("no status line with --json")
	}

	// An error is printed after the line is cleared.
	r = e.runOnTerminal(false, "backup", filepath.Join(e.dir, "term.db")).want(t, exitError)
	if _, rest = statusLines(t, r.stderr); !strings.HasPrefix(rest, "sessionctl backup: ") {
		t.Errorf("error after the status line: %q", rest)
	}
}

// vacuumFreed is the figure of gc's vacuum line.
var vacuumFreed = regexp.MustCompile(`(?m)^(vacuum: database file ).*$`)

// sameButVacuum returns gc's output with the vacuum's figure blanked.
func sameButVacuum(s string) string { return vacuumFreed.ReplaceAllString(s, "${1}N") }
