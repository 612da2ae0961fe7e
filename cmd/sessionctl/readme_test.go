package main

// The transcripts of the README and of the guides run as a test (issues
// 24 and 38): TestDocTranscripts runs, for README.md and for every
// docs/*.md, each block that shows "$ sessionctl" command lines, in order,
// against one fresh database per document (so that a guide reads, and
// runs, on its own), and compares what each command prints with the
// lines the document shows under it. The binary is the truth; a document
// that drifts from it fails here (TestDocTranscriptsFailOnDrift shows it).
// The Go snippets of the same documents are compiled by docs/'s own test.
//
// What the test reads, and how (the conventions a README author follows):
//
//   - A transcript block is a fenced code block with a line starting
//     "$ sessionctl ". Every line starting "$ " in it is a command; the
//     lines after it, up to the next command or the end of the block, are
//     its output: stdout, then stderr. Blank lines at the end of an
//     output, and spaces at the end of a line, are not compared.
//   - Commands are simple shell lines: words, '…' and "…" quoting (no
//     expansions), glob patterns expanded in the working directory, a
//     trailing "# comment", "A && B" (B runs when A exits 0), and
//     `; echo "exit $?"`, which prints A's exit status as "exit N". A
//     command whose status is not echoed must exit 0. Pipes and other
//     programs are refused: show the whole output, with "..." for the
//     lines left out.
//   - An output line that is only "..." (indented or not) stands for any
//     number of lines, none included.
//   - A UUID in the README stands for the random one the binary printed at
//     that place: its first appearance binds it, and every later one (in
//     outputs and in commands) must be the same value. A hexadecimal
//     SHA-256 digest of 64 digits matches any such digest (audit digests
//     cover records with random ids).
//   - An HTML comment on the line right before a block's opening fence,
//     `<!-- transcript: DIRECTIVE; DIRECTIVE -->`, says more:
//     "not run (REASON)" skips the block (the test counts these, and
//     fails when fewer blocks ran than were found minus the skipped);
//     "fixture NAME" first writes, through the library, data sessionctl
//     cannot write itself (readmeFixtures); "numbers vary" lets every
//     number of the block's output match any number and every run of
//     spaces any run of spaces (measurements: bench); "times vary" lets
//     every time of the block's output match any time (times the
//     database writes by its own clock, not the store's: migrate status);
//     "slow" runs the block except under the race detector, which slows
//     the transpiled SQLite about twentyfold (bench's setup alone takes
//     more than a minute then): there it counts as not run.
//
// The environment, for each document: a temporary directory is the
// working directory, the database is its sessions.db (--db,
// $SESSIONCTL_DB and $SESSIONSTORE_TENANT unset), the a3s samples are
// copied to testdata/a3s in it, the umask is 022, stdin is
// empty and not a terminal, the clock starts at readmeClockStart and
// advances one second after every command, and random UUIDs come from a
// seeded source (so that listings sorted by id keep one order).

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/store/storetest"
)

// readmeClockStart is the time of the README's first command.
var readmeClockStart = time.Date(2026, 11, 22, 6, 2, 4, 0, time.UTC)

// readmePath is the README, and docsDir the directory of the guides,
// from this package's directory.
const (
	readmePath = "../../README.md"
	docsDir    = "../../docs"
)

// readmeRun is one run of the README's transcripts.
type readmeRun struct {
	env   *testEnv
	clock *storetest.Clock
	// uuids maps a UUID the README shows to the one the binary printed.
	uuids map[string]string
}

// exec runs one command line and returns what it printed, "exit N" lines
// included. A status that is not echoed must be 0.
func (r *readmeRun) exec(line string) ([]string, error) {
	words, err := splitShell(line)
	if err != nil {
		return nil, err
	}
	var out []string
	status, echoed := 0, false
	for len(words) > 0 {
		var cmd []shellWord
		for len(words) > 0 && (words[0].quoted || words[0].text != ";" && words[0].text != "&&") {
			cmd, words = append(cmd, words[0]), words[1:]
		}
		op := ""
		if len(words) > 0 {
			op, words = words[0].text, words[1:]
		}
		switch {
		case len(cmd) == 2 && cmd[0].text == "echo" && cmd[1].text == "exit $?":
			out = append(out, fmt.Sprintf("exit %d", status))
			echoed = true
		case len(cmd) > 0 && cmd[0].text == "sessionctl" && !cmd[0].quoted:
			args, err := r.args(cmd[1:])
			if err != nil {
				return nil, err
			}
			var code int
			code, out = r.sessionctl(args, out)
			status, echoed = code, false
		default:
			return nil, fmt.Errorf("%q: only sessionctl commands and echo \"exit $?\" are run", line)
		}
		if op == "&&" && status != 0 {
			break
		}
	}
	if status != 0 && !echoed {
		return out, fmt.Errorf("%q exited %d, and the README does not show it (add ; echo \"exit $?\")", line, status)
	}
	return out, nil
}

// args expands the README's words: bound UUIDs become the binary's,
// unquoted globs the files they match.
func (r *readmeRun) args(words []shellWord) ([]string, error) {
	var args []string
	for _, w := range words {
		s := w.text
		for _, u := range uuidRE.FindAllString(s, -1) {
			got, ok := r.uuids[u]
			if !ok {
				return nil, fmt.Errorf("the command names %s before any output showed it", u)
			}
			s = strings.ReplaceAll(s, u, got)
		}
		if s == "--follow" || s == "serve" {
			return nil, fmt.Errorf("%s does not end by itself: mark the block <!-- transcript: not run (REASON) -->", s)
		}
		if !w.quoted && strings.ContainsAny(s, "*?[") {
			m, err := filepath.Glob(s)
			if err != nil || len(m) == 0 {
				return nil, fmt.Errorf("%s matches no file (%v)", s, err)
			}
			args = append(args, m...)
			continue
		}
		args = append(args, s)
	}
	return args, nil
}

// sessionctl runs the CLI in-process on the run's clock and appends its
// stdout and stderr lines to out.
func (r *readmeRun) sessionctl(args []string, out []string) (int, []string) {
	var stdout, stderr bytes.Buffer
	g := &globals{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, now: r.clock.Now}
	code := g.run(context.Background(), args)
	r.clock.Advance(time.Second)
	text := strings.ReplaceAll(stdout.String()+stderr.String(), r.env.dir+string(filepath.Separator), "")
	text = strings.TrimRight(text, "\n")
	if text != "" {
		out = append(out, strings.Split(text, "\n")...)
	}
	return code, out
}

// copyTree copies the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docFiles are the documents whose transcripts run: the README and
// every guide under docs/, from this package's directory.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) == 0 {
		t.Fatalf("no guide found in %s", docsDir)
	}
	return append([]string{readmePath}, guides...)
}

// TestDocTranscripts runs the transcripts of the README and of every
// guide under docs/, each document on a fresh database of its own.
func TestDocTranscripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range docFiles(t) {
		name, _ := filepath.Rel("../..", path)
		t.Run(filepath.Base(path), func(t *testing.T) { // -run TestDocTranscripts/retention.md
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := runTranscripts(t, root, name, string(text))
			for _, p := range res.problems {
				t.Error(p)
			}
			if res.found > 0 && res.ran < res.found-res.marked {
				t.Fatalf("ran %d transcript blocks of %d found, %d marked not run", res.ran, res.found, res.marked)
			}
			t.Logf("ran %d transcript blocks of %d found, %d marked not run", res.ran, res.found, res.marked)
		})
	}
}

// transcriptResult is what one document's run found.
type transcriptResult struct {
	found, marked, ran int
	// problems are the outputs that differ from the document's and the
	// commands that failed, one message each.
	problems []string
}

// runTranscripts runs the transcript blocks of one document (named name
// in messages) in order on a fresh database in a temporary working
// directory, on a clock starting at readmeClockStart and seeded UUIDs.
func runTranscripts(t *testing.T, root, name, text string) transcriptResult {
	var res transcriptResult
	blocks, err := parseReadme(text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dir := t.TempDir()
	copyTree(t, filepath.Join(root, "testdata", "a3s"), filepath.Join(dir, "testdata", "a3s"))
	t.Chdir(dir)
	t.Setenv("SESSIONCTL_DB", "")
	t.Setenv("SESSIONSTORE_TENANT", "")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	// Random UUIDs from a seeded source: the same ids every run, so that
	// listings sorted by id keep the document's order.
	uuid.SetRand(rand.NewChaCha8([32]byte{'r', 'e', 'a', 'd', 'm', 'e'}))
	defer uuid.SetRand(nil)

	clock := storetest.NewClock()
	clock.Advance(readmeClockStart.Sub(clock.Now()))
	r := &readmeRun{env: &testEnv{t: t, dir: dir, db: filepath.Join(dir, "sessions.db"), clock: clock},
		clock: clock, uuids: map[string]string{}}

	for _, b := range blocks {
		if !b.transcript() {
			if len(b.directives) > 0 {
				res.problems = append(res.problems, fmt.Sprintf("%s line %d: a transcript directive on a block without $ sessionctl lines", name, b.line))
			}
			continue
		}
		res.found++
		if d, ok := b.directive("not run"); ok {
			if !notRunRE.MatchString(d) {
				res.problems = append(res.problems, fmt.Sprintf("%s line %d: %q: say why, as not run (REASON)", name, b.line, d))
			}
			res.marked++
			continue
		}
		if _, ok := b.directive("slow"); ok && (raceOn || testing.Short()) {
			t.Logf("%s line %d: a slow block, not run under the race detector or -short", name, b.line)
			res.marked++
			continue
		}
		var opts matchOptions
		for _, d := range b.directives {
			switch fixture, isFixture := strings.CutPrefix(d, "fixture "); {
			case isFixture:
				f, ok := readmeFixtures[fixture]
				if !ok {
					t.Fatalf("%s line %d: no fixture %q", name, b.line, fixture)
				}
				f(r.env)
			case d == "numbers vary":
				opts.numbersVary = true
			case d == "times vary":
				opts.timesVary = true
			case d == "slow":
			default:
				t.Fatalf("%s line %d: unknown transcript directive %q", name, b.line, d)
			}
		}
		for _, s := range b.steps() {
			got, err := r.exec(s.cmd)
			got = trimLines(got)
			if err != nil {
				res.problems = append(res.problems, fmt.Sprintf("%s line %d: %v\noutput:\n%s", name, s.line, err, strings.Join(got, "\n")))
				return res // the later commands depend on this one
			}
			u, ok := matchOutput(trimLines(s.want), got, r.uuids, opts)
			if !ok {
				res.problems = append(res.problems, fmt.Sprintf("%s line %d: $ %s\n--- the document shows\n%s\n--- sessionctl printed\n%s",
					name, s.line, s.cmd, strings.Join(trimLines(s.want), "\n"), strings.Join(got, "\n")))
				continue // the next commands still run: each mismatch is reported
			}
			r.uuids = u
		}
		res.ran++
	}
	return res
}

// TestDocTranscriptsFailOnDrift: a transcript whose output differs from
// the binary's, by one word or one number, is reported; the same
// transcript with the binary's output is not.
func TestDocTranscriptsFailOnDrift(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const doc = "# A guide\n\n```\n$ sessionctl create --id t1 --agent a --tool x --budget 2\nt1\n" +
		"$ sessionctl use t1 --agent a --tool x\nallowed 1 call: %s of 2 calls made, 1 remaining\n```\n"
	if res := runTranscripts(t, root, "good.md", fmt.Sprintf(doc, "1")); len(res.problems) != 0 || res.ran != 1 {
		t.Fatalf("the true transcript: ran %d, problems %q", res.ran, res.problems)
	}
	for _, drift := range []string{"2", "one"} {
		res := runTranscripts(t, root, "drifted.md", fmt.Sprintf(doc, drift))
		if len(res.problems) != 1 || !strings.Contains(res.problems[0], "drifted.md line 6") {
			t.Errorf("a drifted transcript (%s of 2 calls made): problems %q", drift, res.problems)
		}
	}
	// A command that fails without showing its status is a problem too.
	res := runTranscripts(t, root, "status.md", "```\n$ sessionctl create --id t1 --agent a --tool x --budget 2\nt1\n$ sessionctl show nope\n```\n")
	if len(res.problems) != 1 || !strings.Contains(res.problems[0], "status.md line 4") || !strings.Contains(res.problems[0], "exited 3") {
		t.Errorf("an unshown exit status: problems %q", res.problems)
	}
}

// TestDocCommandList: every overview of the commands in the README and
// the guides (a block beginning "sessionctl [--db PATH] COMMAND [ARGS]")
// names every command of the binary, in its groups and order, and there
// is at least one.
func TestDocCommandList(t *testing.T) {
	t.Parallel()
	var want [][]string
	group := ""
	for _, c := range commands() {
		if c.group != group {
			group = c.group
			want = append(want, nil)
		}
		want[len(want)-1] = append(want[len(want)-1], c.name)
	}
	lists := 0
	for _, path := range docFiles(t) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseReadme(string(text))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, b := range blocks {
			if len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "sessionctl [--db PATH] COMMAND [ARGS]") {
				continue
			}
			lists++
			var shown [][]string
			for _, l := range b.lines[1:] {
				if _, names, ok := strings.Cut(l, ":"); ok && l != "" {
					shown = append(shown, strings.Fields(names))
				}
			}
			if fmt.Sprint(shown) != fmt.Sprint(want) {
				t.Errorf("%s line %d: the command list shows\n%v\nthe binary has\n%v", path, b.line, shown, want)
			}
		}
	}
	if lists == 0 {
		t.Error("no document lists the commands")
	}
}

// TestREADMETranscriptMatching: the conventions above, each shown to
// accept what it should and refuse what it should not.
