package main

// The README's transcripts run as a test (issue 24): TestREADMETranscripts
// runs every block of README.md that shows "$ sessionctl" command lines,
// in order, against one fresh database, and compares what each command
// prints with the lines the README shows under it. The binary is the
// truth; a README that drifts from it fails here.
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
// The environment: a temporary directory is the working directory, the
// database is its sessions.db (--db and $SESSIONCTL_DB unset), the a3s
// samples are copied to testdata/a3s in it, the umask is 022, stdin is
// empty and not a terminal, the clock starts at readmeClockStart and
// advances one second after every command, and random UUIDs come from a
// seeded source (so that listings sorted by id keep one order).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// readmeClockStart is the time of the README's first command.
var readmeClockStart = time.Date(2026, 11, 22, 6, 2, 4, 0, time.UTC)

// readmePath is the README, from this package's directory.
const readmePath = "../../README.md"

// readmeBlock is one fenced block of the README.
type readmeBlock struct {
	line       int      // line number of the opening fence (1-based)
	directives []string // of the transcript comment before it
	lines      []string // between the fences
}

// transcript reports whether the block shows sessionctl commands.
func (b readmeBlock) transcript() bool {
	for _, l := range b.lines {
		if strings.HasPrefix(l, "$ sessionctl ") {
			return true
		}
	}
	return false
}

// directive returns the block's directive starting with prefix.
func (b readmeBlock) directive(prefix string) (string, bool) {
	for _, d := range b.directives {
		if strings.HasPrefix(d, prefix) {
			return d, true
		}
	}
	return "", false
}

var (
	directiveRE = regexp.MustCompile(`^<!-- transcript: (.+) -->$`)
	notRunRE    = regexp.MustCompile(`^not run \(.+\)$`)
)

// parseReadme returns the README's fenced blocks with their directives.
// A directive comment that no block follows is an error.
func parseReadme(text string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := directiveRE.FindStringSubmatch(l); m != nil {
			if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") {
				return nil, fmt.Errorf("README line %d: a transcript directive must stand right before a block's opening fence", i+1)
			}
			continue
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := readmeBlock{line: i + 1}
		if i > 0 {
			if m := directiveRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				for d := range strings.SplitSeq(m[1], ";") {
					b.directives = append(b.directives, strings.TrimSpace(d))
				}
			}
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			b.lines = append(b.lines, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("README line %d: the block is not closed", b.line)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// readmeStep is one command line of a transcript and the output shown
// under it.
type readmeStep struct {
	line int // in the README
	cmd  string
	want []string
}

// steps splits a transcript block into its commands and their outputs.
func (b readmeBlock) steps() []readmeStep {
	var out []readmeStep
	for i, l := range b.lines {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			out = append(out, readmeStep{line: b.line + 1 + i, cmd: cmd})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].want = append(out[len(out)-1].want, l)
		}
	}
	return out
}

// shellWord is one word of a command line; quoted words are not globbed.
type shellWord struct {
	text   string
	quoted bool
}

// splitShell splits a command line into words and the operators ";",
// "&&" and "|", dropping a trailing comment.
func splitShell(line string) ([]shellWord, error) {
	var words []shellWord
	var cur strings.Builder
	inWord, quoted := false, false
	flush := func() {
		if inWord {
			words = append(words, shellWord{cur.String(), quoted})
		}
		cur.Reset()
		inWord, quoted = false, false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return words, nil
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord, quoted = true, true
			i += end + 1
		case c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == '`' || c == '(' || c == ')':
			flush()
			op := string(c)
			if c == '&' && strings.HasPrefix(line[i:], "&&") {
				op = "&&"
				i++
			}
			if op != ";" && op != "&&" {
				return nil, fmt.Errorf("%q: only ;, && and echo \"exit $?\" are run; show the whole output instead of %q", line, op)
			}
			words = append(words, shellWord{text: op})
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

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

var (
	hashRE   = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	numberRE = regexp.MustCompile(`[0-9][0-9.,]*[0-9]|[0-9]`)
	spacesRE = regexp.MustCompile(` {2,}`)
	// timeRE is a time as sessionctl prints it: RFC 3339 or the tables'
	// "2006-01-02 15:04:05Z", with optional fractional seconds.
	timeRE = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z`)
)

// matchOptions are a block's directives that loosen the comparison.
type matchOptions struct {
	numbersVary, timesVary bool
}

// lineMatcher compiles one README output line into a regular expression;
// groups[i] is the README UUID that capture group i+1 binds.
func lineMatcher(want string, uuids map[string]string, o matchOptions) (*regexp.Regexp, []string) {
	type span struct {
		start, end int
		kind       string
	}
	var spans []span
	for _, m := range uuidRE.FindAllStringIndex(want, -1) {
		spans = append(spans, span{m[0], m[1], "uuid"})
	}
	for _, m := range hashRE.FindAllStringIndex(want, -1) {
		spans = append(spans, span{m[0], m[1], "hash"})
	}
	if o.timesVary {
		for _, m := range timeRE.FindAllStringIndex(want, -1) {
			spans = append(spans, span{m[0], m[1], "time"})
		}
	}
	if o.numbersVary {
		for _, m := range numberRE.FindAllStringIndex(want, -1) {
			spans = append(spans, span{m[0], m[1], "number"})
		}
		for _, m := range spacesRE.FindAllStringIndex(want, -1) {
			spans = append(spans, span{m[0], m[1], "spaces"})
		}
	}
	// Earlier spans win; a number inside a UUID or a hash is part of it.
	var b strings.Builder
	var groups []string
	b.WriteString("^")
	pos := 0
	for pos < len(want) {
		var best *span
		for i := range spans {
			s := &spans[i]
			if s.start >= pos && (best == nil || s.start < best.start || s.start == best.start && s.end > best.end) {
				best = s
			}
		}
		if best == nil {
			break
		}
		b.WriteString(regexp.QuoteMeta(want[pos:best.start]))
		text := want[best.start:best.end]
		switch best.kind {
		case "uuid":
			if got, ok := uuids[text]; ok {
				b.WriteString(regexp.QuoteMeta(got))
			} else {
				b.WriteString("(" + uuidRE.String() + ")")
				groups = append(groups, text)
			}
		case "hash":
			b.WriteString(`[0-9a-f]{64}`)
		case "time":
			b.WriteString(timeRE.String())
		case "number":
			b.WriteString(`[0-9][0-9.,]*`)
		case "spaces":
			b.WriteString(` +`)
		}
		pos = best.end
	}
	b.WriteString(regexp.QuoteMeta(want[pos:]))
	b.WriteString("$")
	return regexp.MustCompile(b.String()), groups
}

// matchOutput matches the README's lines against the binary's; "..."
// lines stand for any number of lines. It returns the UUID bindings the
// match made (added to uuids), or false.
func matchOutput(want, got []string, uuids map[string]string, o matchOptions) (map[string]string, bool) {
	if len(want) == 0 {
		return uuids, len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for skip := 0; skip <= len(got); skip++ {
			if u, ok := matchOutput(want[1:], got[skip:], uuids, o); ok {
				return u, true
			}
		}
		return nil, false
	}
	if len(got) == 0 {
		return nil, false
	}
	re, groups := lineMatcher(want[0], uuids, o)
	m := re.FindStringSubmatch(got[0])
	if m == nil {
		return nil, false
	}
	next := uuids
	if len(groups) > 0 {
		next = maps.Clone(uuids)
		taken := map[string]bool{}
		for _, v := range next {
			taken[v] = true
		}
		for i, readme := range groups {
			if prev, ok := next[readme]; ok { // twice on this line
				if prev != m[i+1] {
					return nil, false
				}
				continue
			}
			if taken[m[i+1]] { // the README shows another UUID for it elsewhere
				return nil, false
			}
			next[readme], taken[m[i+1]] = m[i+1], true
		}
	}
	return matchOutput(want[1:], got[1:], next, o)
}

// trimLines drops spaces at the ends of lines and blank lines at the end.
func trimLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// readmeFixtures write what a transcript shows that sessionctl cannot
// write itself, through the library, on the run's clock.
var readmeFixtures = map[string]func(e *testEnv){
	"agent-sessions": readmeAgentSessions,
	"conversation":   readmeConversation,
}

// readmeAgentSessions writes two agent sessions of the app "support": ada's
// s1 with twelve events in two invocations and state in every scope, and
// bob's s1 without events.
func readmeAgentSessions(e *testEnv) {
	t := e.t
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	as := st.AgentSessions()
	ada := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: ada, State: store.ScopedState{
		App:  map[string]json.RawMessage{"greeting": json.RawMessage(`"hi"`)},
		User: map[string]json.RawMessage{"tier": json.RawMessage(`"gold"`)},
	}}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		e.clock.Advance(700 * time.Millisecond)
		author := "user"
		if i%2 == 1 {
			author = "model"
		}
		ev := store.AgentEvent{ID: fmt.Sprintf("e%d", i), InvocationID: fmt.Sprintf("inv-%d", 1+i/6),
			Data: json.RawMessage(fmt.Sprintf(`{"author":%q,"n":%d}`, author, i))}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: ada, Event: ev, Delta: store.ScopedState{
			Session: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Second)
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "support", User: "bob", Session: "s1"}}); err != nil {
		t.Fatal(err)
	}
}

// readmeConversation writes the conversation conv-1: a question, a tool
// call and its result, and the answer, with usage and cost.
func readmeConversation(e *testEnv) {
	t := e.t
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	c := store.NewConversation("conv-1")
	c.Config.Name = "fix the flaky test"
	if _, err := st.Conversations().Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Append(ctx, store.AppendRequest{ID: "conv-1", Messages: []store.Message{
		store.UserMessage("The parser test is flaky."),
		{Role: store.RoleAssistant, Content: []store.ContentBlock{store.ToolUseBlock("t1", "bash", json.RawMessage(`{"command":"go test ./parser"}`))}},
		{Role: store.RoleUser, Content: []store.ContentBlock{store.ToolResultBlock("t1", "FAIL: TestParse (map order)", true)}},
		store.AssistantMessage("The test depended on map order; fixed."),
		store.UserMessage("Thanks."),
	}, Usage: &store.TokenUsage{PromptTokens: 2400, CompletionTokens: 180, TotalTokens: 2580}, Cost: 0.0121}); err != nil {
		t.Fatal(err)
	}
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

func TestREADMETranscripts(t *testing.T) {
	text, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseReadme(string(text))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyTree(t, filepath.Join(root, "testdata", "a3s"), filepath.Join(dir, "testdata", "a3s"))
	t.Chdir(dir)
	t.Setenv("SESSIONCTL_DB", "")
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	// Random UUIDs from a seeded source: the same ids every run, so that
	// listings sorted by id keep the README's order.
	uuid.SetRand(rand.NewChaCha8([32]byte{'r', 'e', 'a', 'd', 'm', 'e'}))
	t.Cleanup(func() { uuid.SetRand(nil) })

	clock := storetest.NewClock()
	clock.Advance(readmeClockStart.Sub(clock.Now()))
	r := &readmeRun{env: &testEnv{t: t, dir: dir, db: filepath.Join(dir, "sessions.db"), clock: clock},
		clock: clock, uuids: map[string]string{}}

	found, marked, ran := 0, 0, 0
	for _, b := range blocks {
		if !b.transcript() {
			if len(b.directives) > 0 {
				t.Errorf("README line %d: a transcript directive on a block without $ sessionctl lines", b.line)
			}
			continue
		}
		found++
		if d, ok := b.directive("not run"); ok {
			if !notRunRE.MatchString(d) {
				t.Errorf("README line %d: %q: say why, as not run (REASON)", b.line, d)
			}
			marked++
			continue
		}
		if _, ok := b.directive("slow"); ok && raceOn {
			t.Logf("README line %d: a slow block, not run under the race detector", b.line)
			marked++
			continue
		}
		var opts matchOptions
		for _, d := range b.directives {
			switch name, isFixture := strings.CutPrefix(d, "fixture "); {
			case isFixture:
				f, ok := readmeFixtures[name]
				if !ok {
					t.Fatalf("README line %d: no fixture %q", b.line, name)
				}
				f(r.env)
			case d == "numbers vary":
				opts.numbersVary = true
			case d == "times vary":
				opts.timesVary = true
			case d == "slow":
			default:
				t.Fatalf("README line %d: unknown transcript directive %q", b.line, d)
			}
		}
		for _, s := range b.steps() {
			got, err := r.exec(s.cmd)
			got = trimLines(got)
			if err != nil {
				t.Fatalf("README line %d: %v\noutput:\n%s", s.line, err, strings.Join(got, "\n"))
			}
			u, ok := matchOutput(trimLines(s.want), got, r.uuids, opts)
			if !ok {
				t.Errorf("README line %d: $ %s\n--- the README shows\n%s\n--- sessionctl printed\n%s",
					s.line, s.cmd, strings.Join(trimLines(s.want), "\n"), strings.Join(got, "\n"))
				continue // the next commands still run: each mismatch is reported
			}
			r.uuids = u
		}
		ran++
	}
	if found == 0 || ran < found-marked {
		t.Fatalf("ran %d transcript blocks of %d found, %d marked not run", ran, found, marked)
	}
	t.Logf("ran %d transcript blocks of %d found, %d marked not run", ran, found, marked)
}

// TestREADMECommandList: the README's overview of the commands names
// every command of the binary, in its groups and order.
func TestREADMECommandList(t *testing.T) {
	text, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseReadme(string(text))
	if err != nil {
		t.Fatal(err)
	}
	var shown [][]string
	for _, b := range blocks {
		if len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "sessionctl [--db PATH] COMMAND [ARGS]") {
			continue
		}
		for _, l := range b.lines[1:] {
			if _, names, ok := strings.Cut(l, ":"); ok && l != "" {
				shown = append(shown, strings.Fields(names))
			}
		}
	}
	var want [][]string
	group := ""
	for _, c := range commands() {
		if c.group != group {
			group = c.group
			want = append(want, nil)
		}
		want[len(want)-1] = append(want[len(want)-1], c.name)
	}
	if fmt.Sprint(shown) != fmt.Sprint(want) {
		t.Errorf("the README's command list shows\n%v\nthe binary has\n%v", shown, want)
	}
}

// TestREADMETranscriptMatching: the conventions above, each shown to
// accept what it should and refuse what it should not.
func TestREADMETranscriptMatching(t *testing.T) {
	const u1, u2 = "ee638fbb-6733-44f2-92e0-92ef694e7960", "40152c26-3bde-4c10-a05a-4e875a062164"
	const g1, g2 = "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-9999-aaaaaaaaaaaa"
	for _, c := range []struct {
		name      string
		want, got []string
		opts      matchOptions
		ok        bool
	}{
		{"same text", []string{"a  b", "c"}, []string{"a  b", "c"}, matchOptions{}, true},
		{"other text", []string{"a b"}, []string{"a c"}, matchOptions{}, false},
		{"spaces count", []string{"a  b"}, []string{"a b"}, matchOptions{}, false},
		{"a missing line", []string{"a", "b"}, []string{"a"}, matchOptions{}, false},
		{"an extra line", []string{"a"}, []string{"a", "b"}, matchOptions{}, false},
		{"elision of none", []string{"a", "...", "b"}, []string{"a", "b"}, matchOptions{}, true},
		{"elision of several", []string{"a", "  ...", "d"}, []string{"a", "b", "c", "d"}, matchOptions{}, true},
		{"elision keeps the rest", []string{"a", "...", "d"}, []string{"a", "b", "c"}, matchOptions{}, false},
		{"a UUID binds", []string{"id " + u1, "again " + u1}, []string{"id " + g1, "again " + g1}, matchOptions{}, true},
		{"a bound UUID is one value", []string{"id " + u1, "again " + u1}, []string{"id " + g1, "again " + g2}, matchOptions{}, false},
		{"two README UUIDs are two values", []string{"id " + u1, "other " + u2}, []string{"id " + g1, "other " + g1}, matchOptions{}, false},
		{"a UUID is not any text", []string{"id " + u1}, []string{"id task-7"}, matchOptions{}, false},
		{"a digest matches a digest", []string{"digest " + strings.Repeat("ab", 32)}, []string{"digest " + strings.Repeat("0f", 32)}, matchOptions{}, true},
		{"a digest is not a short hash", []string{"digest " + strings.Repeat("ab", 32)}, []string{"digest 0f0f"}, matchOptions{}, false},
		{"numbers are exact", []string{"F = 6905/s"}, []string{"F = 1594/s"}, matchOptions{}, false},
		{"numbers vary", []string{"F = 6905/s, p50 139 µs", "use  1  4637  0.67"}, []string{"F = 1594/s, p50 1322 µs", "use  1    530  12.33"}, matchOptions{numbersVary: true}, true},
		{"times are exact", []string{"applied  2026-11-22T06:02:04Z"}, []string{"applied  2026-11-26T08:07:03Z"}, matchOptions{}, false},
		{"times vary", []string{"applied  2026-11-22T06:02:04Z", "at 2026-11-22 06:02:04.5Z"}, []string{"applied  2026-11-26T08:07:03Z", "at 2027-01-01 00:00:00Z"}, matchOptions{timesVary: true}, true},
		{"varying times are times", []string{"applied  2026-11-22T06:02:04Z"}, []string{"applied  never"}, matchOptions{timesVary: true}, false},
		{"varying times keep the numbers", []string{"10  2026-11-22T06:02:04Z"}, []string{"9  2026-11-22T06:02:04Z"}, matchOptions{timesVary: true}, false},
		{"varying numbers keep the words", []string{"F = 6905/s"}, []string{"G = 6905/s"}, matchOptions{numbersVary: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ok := matchOutput(c.want, c.got, map[string]string{}, c.opts)
			if ok != c.ok {
				t.Errorf("match %q against %q: %v, want %v", c.want, c.got, ok, c.ok)
			}
		})
	}
	// Commands: what runs, what is refused.
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`sessionctl use t --tool a; echo "exit $?"   # a comment`, true},
		{`sessionctl export --output all.json && sessionctl --db copy.db import all.json`, true},
		{`sessionctl show t | sed -n '/spend:/,$p'`, false},
		{`sessionctl list > out.txt`, false},
	} {
		_, err := splitShell(c.line)
		if (err == nil) != c.ok {
			t.Errorf("splitShell(%q): %v", c.line, err)
		}
	}
	words, err := splitShell(`sessionctl create --tool '*' --intent "a b" ; echo "exit $?" # note`)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, w := range words {
		texts = append(texts, w.text)
	}
	if want := []string{"sessionctl", "create", "--tool", "*", "--intent", "a b", ";", "echo", "exit $?"}; fmt.Sprint(texts) != fmt.Sprint(want) || !words[3].quoted {
		t.Errorf("splitShell: %q", texts)
	}
	if _, err := parseReadme("<!-- transcript: not run (x) -->\ntext\n```\n$ sessionctl list\n```\n"); err == nil {
		t.Error("a directive that no block follows was accepted")
	}
	if _, err := parseReadme("```\n$ sessionctl list\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
}
