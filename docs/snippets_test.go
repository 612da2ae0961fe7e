package docs

// The Go snippets of README.md and docs/*.md compile (issue 38):
// TestGoSnippets takes every ```go block of those documents, makes each
// a package main of its own in a temporary directory of the module (under
// a testdata directory, so that ./... never sees it), and runs `go vet` on
// all of them at once: a snippet that names a function, a field or a type
// the library does not have, or passes a value of the wrong type, fails
// the test with the document's line.
//
// What a snippet is (the conventions a guide's author follows):
//
//   - A block whose first line starts with "package " is a whole Go file,
//     compiled as it is.
//   - Any other block is a fragment: the body of a function
//     `func snippet(ctx context.Context, st *sqlstore.Store) error`, with
//     the imports it needs added (the packages of this module, ADK's
//     runner and session, and the standard library's packages the guides
//     use: snippetImports) and every variable it declares at its top
//     level used, so that a fragment may end with the result it shows.
//   - An HTML comment on the line right before the opening fence,
//     `<!-- go: DIRECTIVE; DIRECTIVE -->`, says more: "given NAME TYPE,
//     NAME TYPE" replaces the function's parameters (what the snippet
//     takes from the text around it); "module adk" compiles it in the adk
//     module; "run" also runs the program in a temporary directory,
//     where it must exit 0, and the next block, if its comment is
//     <!-- go: output -->, is what it must print. A fragment marked run
//     is called with a background context for ctx, a store opened on
//     sessions.db in that directory for a *sqlstore.Store, and the zero
//     value of any other parameter, and must return nil.
//   - "setup NAME" runs the fragment too (in its module, root or adk),
//     with what it is given built by the setup NAME of snippetSetups
//     (snippet_setups_test.go), so that the guide shows only the
//     fragment: Go source the harness writes into the program's main
//     around the call. The setup's body declares a variable for each
//     parameter but ctx, under the parameter's name, on a real store in
//     the temporary directory (a session with events for history.md, a
//     PNG and its real SHA-256 for runtime.md, a second ADK service that
//     makes the handle stale for the adk module's retry loop, ...); the
//     fragment must return nil (or what the setup's result accepts: the
//     change feed's loop ends with context.Canceled once its setup
//     cancels ctx after the last message shown); then the setup's after
//     code checks in the store that the fragment did what the guide says,
//     so a fragment that ignores its calls' errors does not pass by
//     doing nothing. A setup marked postgres gets a schema of its own on
//     the server of SESSIONSTORE_TEST_POSTGRES_URL
//     (scripts/with-postgres.sh, as test.sh runs ./...), and skips
//     without one (fails in CI). Each fragment that runs is a subtest
//     named by its document's file name and line (`go test ./docs -run
//     'TestGoSnippets$/maintenance.md'`); TestGoSnippetsSetupFails shows
//     a setup's program failing.
//
// Fragments that only compile have no setup: today postgresql.md's, which
// names a server of the reader's (db.internal), where running it would
// only show the error it ignores.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
)

// snippetImports are the import paths of the package names a fragment
// may use without importing them.
var snippetImports = map[string]string{
	"store":    "github.com/agentstore/sessionstore/store",
	"a3s":      "github.com/agentstore/sessionstore/store/a3s",
	"sqlstore": "github.com/agentstore/sessionstore/sqlstore",
	"pgstore":  "github.com/agentstore/sessionstore/pgstore",
	"archive":  "github.com/agentstore/sessionstore/archive",
	"check":    "github.com/agentstore/sessionstore/check",
	"console":  "github.com/agentstore/sessionstore/console",
	"keys":     "github.com/agentstore/sessionstore/keys",
	"facet":    "github.com/agentstore/sessionstore/facet",
	"loadtest": "github.com/agentstore/sessionstore/loadtest",
	"adk":      "github.com/agentstore/sessionstore/adk",
	"runner":   "google.golang.org/adk/v2/runner",
	"session":  "google.golang.org/adk/v2/session",
	"agent":    "google.golang.org/adk/v2/agent",
	"context":  "context",
	"errors":   "errors",
	"fmt":      "fmt",
	"io":       "io",
	"log":      "log",
	"slog":     "log/slog",
	"os":       "os",
	"time":     "time",
	"json":     "encoding/json",
	"http":     "net/http",
	"sql":      "database/sql",
	"strings":  "strings",
	"filepath": "path/filepath",
	"sha256":   "crypto/sha256",
	"hex":      "encoding/hex",
	"iter":     "iter",
	"signal":   "os/signal",
	"bytes":    "bytes",
	"strconv":  "strconv",
	"rand":     "crypto/rand",
	"testing":  "testing",
}

// defaultGiven is a fragment's function parameters without a "given"
// directive.
const defaultGiven = "ctx context.Context, st *sqlstore.Store"

// docSnippet is one Go block of a document.
type docSnippet struct {
	doc        string // the document's path relative to the module root
	line       int    // of the opening fence
	directives []string
	text       string
	output     *string // the expected output of a "run" snippet
}

var (
	fenceRE     = regexp.MustCompile("^```([a-z]*)\\s*$")
	goDirective = regexp.MustCompile(`^<!-- go: (.+) -->$`)
)

// docSnippets returns the Go blocks of one document, and the output
// blocks that follow "run" snippets.
func docSnippets(doc, text string) ([]docSnippet, error) {
	var out []docSnippet
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		m := fenceRE.FindStringSubmatch(l)
		if m == nil {
			if goDirective.MatchString(l) && (i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```")) {
				return nil, fmt.Errorf("%s line %d: a go directive must stand right before a block's opening fence", doc, i+1)
			}
			continue
		}
		start := i
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s line %d: the block is not closed", doc, start+1)
		}
		var directives []string
		if start > 0 {
			if d := goDirective.FindStringSubmatch(strings.TrimSpace(lines[start-1])); d != nil {
				for part := range strings.SplitSeq(d[1], ";") {
					directives = append(directives, strings.TrimSpace(part))
				}
			}
		}
		text := strings.Join(body, "\n") + "\n"
		if slices.Contains(directives, "output") {
			if len(out) == 0 || !slices.Contains(out[len(out)-1].directives, "run") || out[len(out)-1].output != nil {
				return nil, fmt.Errorf("%s line %d: an output block must follow a go block marked run", doc, start+1)
			}
			out[len(out)-1].output = &text
			continue
		}
		if m[1] != "go" {
			if len(directives) > 0 {
				return nil, fmt.Errorf("%s line %d: a go directive on a block that is not ```go", doc, start+1)
			}
			continue
		}
		out = append(out, docSnippet{doc: doc, line: start + 1, directives: directives, text: text})
	}
	return out, nil
}

// directive returns the snippet's directive starting with prefix.
func (s docSnippet) directive(prefix string) (string, bool) {
	for _, d := range s.directives {
		if strings.HasPrefix(d, prefix) {
			return d, true
		}
	}
	return "", false
}

// source returns the snippet as a Go file of package main.
func (s docSnippet) source() (string, error) {
	var setup *snippetSetup
	for _, d := range s.directives {
		if name, ok := strings.CutPrefix(d, "setup "); ok {
			if setup = snippetSetups[name]; setup == nil {
				return "", fmt.Errorf("unknown setup %q (snippetSetups)", name)
			}
			continue
		}
		if d != "run" && d != "module adk" && !strings.HasPrefix(d, "given ") {
			return "", fmt.Errorf("unknown go directive %q", d)
		}
	}
	if strings.HasPrefix(s.text, "package ") {
		return s.text, nil
	}
	given := defaultGiven
	if d, ok := s.directive("given "); ok {
		given = strings.TrimPrefix(d, "given ")
	}
	_, run := s.directive("run")
	wrapped := "package main\n\nfunc main() {}\n\nfunc snippet(" + given + ") error {\n" + s.text + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", wrapped, 0)
	if err != nil {
		return "", err
	}
	body := f.Decls[len(f.Decls)-1].(*ast.FuncDecl).Body
	// Every variable declared at the top level is used, and the function
	// returns.
	var declared []string
	seen := map[string]bool{}
	add := func(id *ast.Ident) {
		if id.Name != "_" && !seen[id.Name] {
			seen[id.Name] = true
			declared = append(declared, id.Name)
		}
	}
	for _, st := range body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	var uses strings.Builder
	for _, name := range declared {
		fmt.Fprintf(&uses, "\t_ = %s\n", name)
	}
	end := "\treturn nil\n"
	src := s.text
	if n := len(body.List); n > 0 {
		if _, ok := body.List[n-1].(*ast.ReturnStmt); ok {
			// The uses go before the final return, which stays.
			cut := fset.Position(body.List[n-1].Pos()).Offset - fset.Position(body.Lbrace).Offset - 2
			src, end = s.text[:cut]+"\n", s.text[cut:]
		}
	}
	var imports []string
	for _, id := range f.Unresolved {
		if path := snippetImports[id.Name]; path != "" && !slices.Contains(imports, path) {
			imports = append(imports, path)
		}
	}
	main := "func main() {}"
	if setup != nil {
		main = setupMain(f.Decls[len(f.Decls)-1].(*ast.FuncDecl), setup)
		for _, p := range append([]string{"context", "log"}, setup.imports...) {
			if !slices.Contains(imports, p) {
				imports = append(imports, p)
			}
		}
	} else if run {
		var err error
		if main, err = runMain(f.Decls[len(f.Decls)-1].(*ast.FuncDecl), wrapped, fset); err != nil {
			return "", err
		}
		for _, p := range []string{"context", "log", snippetImports["sqlstore"]} {
			if !slices.Contains(imports, p) {
				imports = append(imports, p)
			}
		}
	}
	slices.Sort(imports)
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, p := range imports {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n\n" + main + "\n\nfunc snippet(" + given + ") error {\n" + src + uses.String() + end + "}\n")
	return b.String(), nil
}

// runMain is the main function of a fragment marked run: it calls the
// fragment with a background context for ctx, a store opened on
// sessions.db in the working directory (a temporary one) for a
// *sqlstore.Store, and the zero value of any other parameter, and fails
// when the fragment returns an error.
func runMain(fn *ast.FuncDecl, src string, fset *token.FileSet) (string, error) {
	var args []string
	openStore := false
	for _, field := range fn.Type.Params.List {
		typ := src[fset.Position(field.Type.Pos()).Offset:fset.Position(field.Type.End()).Offset]
		for range field.Names {
			switch {
			case typ == "context.Context":
				args = append(args, "ctx")
			case typ == "*sqlstore.Store":
				args, openStore = append(args, "st"), true
			default:
				args = append(args, "*new("+typ+")")
			}
		}
	}
	var b strings.Builder
	b.WriteString("func main() {\n\tctx := context.Background()\n")
	if openStore {
		b.WriteString("\tst, err := sqlstore.Open(ctx, \"sessions.db\")\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n\tdefer st.Close()\n")
	}
	b.WriteString("\tif err := snippet(" + strings.Join(args, ", ") + "); err != nil {\n\t\tlog.Fatal(\"the snippet returned \", err)\n\t}\n}")
	return b.String(), nil
}

// goCommand returns the go command's path (the test is skipped without
// one) and the module's root directory.
func goCommand(t *testing.T) (goBin, root string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	if root, err = filepath.Abs(".."); err != nil {
		t.Fatal(err)
	}
	return goBin, root
}

// TestGoSnippets: every Go snippet of the README and the guides compiles
// and passes go vet; those marked run also run and print what the
// document shows.
func TestGoSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every snippet of the documents with the go command")
	}
	goBin, root := goCommand(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var snippets []docSnippet
	for _, path := range docs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		s, err := docSnippets(rel, string(text))
		if err != nil {
			t.Fatal(err)
		}
		snippets = append(snippets, s...)
	}
	if len(snippets) == 0 {
		t.Fatal("no Go snippet found")
	}
	// One temporary directory per module, removed at the end.
	dirs := map[string]string{}
	var runs []int
	pkgs := map[string][]string{} // module dir → package dirs
	where := map[string]docSnippet{}
	for i, s := range snippets {
		module := root
		if _, ok := s.directive("module adk"); ok {
			module = filepath.Join(root, "adk")
		}
		if dirs[module] == "" {
			// Under a testdata directory, which ./... leaves out: the
			// root module's in docs/, the adk module's in adk/.
			base := filepath.Join(module, "testdata")
			if module == root {
				base = filepath.Join(root, "docs", "testdata")
			}
			if err := os.MkdirAll(base, 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := os.MkdirTemp(base, "doc-snippets-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				os.RemoveAll(d)
				os.Remove(base) // when the test made it: it is empty then
			})
			dirs[module] = d
		}
		src, err := s.source()
		if err != nil {
			t.Errorf("%s line %d: %v", s.doc, s.line, err)
			continue
		}
		if formatted, err := format.Source([]byte(src)); err == nil {
			src = string(formatted)
		}
		pkg := filepath.Join(dirs[module], fmt.Sprintf("s%03d", i))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(module, pkg)
		pkgs[module] = append(pkgs[module], "./"+rel)
		where[filepath.Base(pkg)] = s
		if s.runs() {
			runs = append(runs, i)
		}
	}
	for module, list := range pkgs {
		cmd := exec.Command(goBin, append([]string{"vet"}, list...)...)
		cmd.Dir = module
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("go vet of the snippets (in %s): %v\n%s", module, err, annotate(string(out), where))
		}
	}
	for _, i := range runs {
		s := snippets[i]
		module := root
		if _, ok := s.directive("module adk"); ok {
			module = filepath.Join(root, "adk")
		}
		pkg := filepath.Join(dirs[module], fmt.Sprintf("s%03d", i))
		t.Run(fmt.Sprintf("%s:%d", filepath.Base(s.doc), s.line), func(t *testing.T) {
			runSnippet(t, goBin, pkg, s)
		})
	}
	t.Logf("%d snippets compiled, %d run", len(snippets), len(runs))
}

// runs tells whether the snippet runs: marked run, or given by a setup.
func (s docSnippet) runs() bool {
	_, run := s.directive("run")
	_, setup := s.directive("setup ")
	return run || setup
}

// runSnippet builds the program of a snippet that runs (in pkg, written
// by TestGoSnippets or goOne) and runs it in a temporary directory: it
// must exit 0 and print the snippet's output block, if it has one. A
// setup that needs PostgreSQL gets a schema of its own on the test
// server, or skips without one (fails in CI).
func runSnippet(t *testing.T, goBin, pkg string, s docSnippet) {
	t.Helper()
	var env []string
	if name, ok := s.directive("setup "); ok {
		if setup := snippetSetups[strings.TrimPrefix(name, "setup ")]; setup != nil && setup.postgres {
			env = append(env, pgtest.EnvURL+"="+pgtest.NewSchema(t))
		}
	}
	bin := filepath.Join(t.TempDir(), "snippet")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = pkg
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("%s line %d: go build: %v\n%s", s.doc, s.line, err, out)
		return
	}
	run := exec.Command(bin)
	run.Dir = t.TempDir()
	run.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Errorf("%s line %d: the program failed: %v\n%s%s", s.doc, s.line, err, stdout.String(), stderr.String())
		return
	}
	if s.output != nil && stdout.String() != *s.output {
		t.Errorf("%s line %d: the program printed\n%s--- the document shows\n%s", s.doc, s.line, stdout.String(), *s.output)
	}
}

// annotate prefixes go vet's lines about a snippet's package with the
// document and line the snippet comes from.
func annotate(out string, where map[string]docSnippet) string {
	var b strings.Builder
	for l := range strings.Lines(out) {
		for pkg, s := range where {
			if strings.Contains(l, "/"+pkg+"/") || strings.HasSuffix(strings.TrimSpace(l), "/"+pkg) {
				fmt.Fprintf(&b, "[%s line %d] ", s.doc, s.line)
				break
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// vetOne writes one snippet as a package under docs/testdata and runs go
// vet on it, returning its output and error.
func vetOne(t *testing.T, goBin, root string, s docSnippet) (string, error) {
	t.Helper()
	return goOne(t, goBin, root, s, "vet")
}

// goOne runs the go command (vet, run) on the package of one snippet.
func goOne(t *testing.T, goBin, root string, s docSnippet, verb string) (string, error) {
	t.Helper()
	src, err := s.source()
	if err != nil {
		return "", err
	}
	base := filepath.Join(root, "docs", "testdata")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "doc-snippet-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.RemoveAll(dir)
		os.Remove(base)
	}()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, verb, ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGoSnippetsFailOnDrift: a snippet that does not compile fails go
// vet as the documents' snippets are run — the README's search snippet
// before issue 38 (a type assertion on the concrete *sqlstore.Store) and
// a call of a method the facet does not have — while the same snippets
// written right pass; and a fragment's declared variables are used.
func TestGoSnippetsFailOnDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, root := goCommand(t)
	for _, c := range []struct {
		name, text, want string
	}{
		{"assertion on a concrete store", "s := st.(store.Searcher)\nres, err := s.Search(ctx, store.SearchQuery{Query: \"refund\"})\n", "not an interface"},
		{"a method the facet lacks", "n, err := st.Governance().CountAll(ctx)\n", "CountAll"},
		{"a field the request lacks", "_, err := st.Governance().Create(ctx, store.CreateRequest{Agent: \"a\"})\nreturn err\n", "unknown field Agent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := vetOne(t, goBin, root, docSnippet{doc: "drift.md", line: 1, text: c.text})
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("go vet: %v, want a failure naming %q:\n%s", err, c.want, out)
			}
		})
	}
	good := "var s store.Searcher = st\nres, err := s.Search(ctx, store.SearchQuery{Query: \"refund\"})\n" +
		"n, err := st.Governance().CountActive(ctx, \"a\")\n"
	if out, err := vetOne(t, goBin, root, docSnippet{doc: "good.md", line: 1, text: good}); err != nil {
		t.Errorf("go vet of a right snippet: %v\n%s", err, out)
	}
	// A fragment marked run runs on a store of its own: it fails when it
	// returns an error, and passes when it returns nil.
	run := []string{"run"}
	if out, err := goOne(t, goBin, root, docSnippet{doc: "fails.md", line: 1, directives: run,
		text: "_, err := st.Governance().Get(ctx, \"no-such-session\")\nreturn err\n"}, "run"); err == nil || !strings.Contains(out, "the snippet returned") {
		t.Errorf("a fragment returning an error ran: %v\n%s", err, out)
	}
	if out, err := goOne(t, goBin, root, docSnippet{doc: "runs.md", line: 1, directives: run,
		text: "_, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: \"a\", AuthorizedTools: []string{\"x\"}, CallBudget: 1, TimeLimit: time.Hour})\nreturn err\n"}, "run"); err != nil {
		t.Errorf("a fragment returning nil failed: %v\n%s", err, out)
	}
}

// TestGoSnippetsSetupFails: a fragment marked setup NAME fails when it
// returns an error, and when it returns nil without doing what the
// setup's checks expect (history.md's agent fragment as it was, with a
// compaction range past the end of the rewound history, which the
// fragment's ignored error hid); an unknown setup is refused.
func TestGoSnippetsSetupFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, root := goCommand(t)
	history := []string{"given ctx context.Context, as store.AgentSessions, key store.SessionKey, summaryJSON json.RawMessage", "setup agent-history"}
	for _, c := range []struct {
		name, text, want string
	}{
		{"the fragment returns an error", "_, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 99, Session: \"s1-retry\"})\nreturn err\n", "the snippet returned"},
		{"the fragment does nothing", "return nil\n", "check after the snippet"},
		{"the compaction past the end", "retry, _ := as.Fork(ctx, store.ForkRequest{Key: key, At: 40, Session: \"s1-retry\"})\n" +
			"_, _ = as.Rewind(ctx, store.RewindRequest{Key: key, To: 12})\n" +
			"_, _ = as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 30}, Summary: store.AgentEvent{Data: summaryJSON}})\n",
			"no compaction record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := goOne(t, goBin, root, docSnippet{doc: "setup.md", line: 1, directives: history, text: c.text}, "run")
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("go run: %v, want a failure naming %q:\n%s", err, c.want, out)
			}
		})
	}
	if _, err := (docSnippet{doc: "setup.md", line: 1, directives: []string{"setup no-such-setup"}, text: "return nil\n"}).source(); err == nil || !strings.Contains(err.Error(), "unknown setup") {
		t.Errorf("an unknown setup: %v", err)
	}
}
