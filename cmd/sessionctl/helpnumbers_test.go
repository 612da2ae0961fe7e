package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
)

// TestHelpQuotesTheCode (issue 38): the numbers help quotes are the
// code's: export's format version and import's accepted versions
// (archive.Version; help said 5 and 1 to 3 when it was 7), every exit
// status quoted beside its words (exitTable); --tenant is named by the
// help of each command that takes it (import's lacked it) and only
// those; fork, rewind and history name conversations, which they take.
func TestHelpQuotesTheCode(t *testing.T) {
	t.Parallel()
	help := func(cmd string) string {
		t.Helper()
		code, out, errs := sctl(t, cmd, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d %s", cmd, code, errs)
		}
		return out
	}
	if m := regexp.MustCompile(`format "sessionctl-export", version\s+(\d+)`).FindStringSubmatch(help("export")); m == nil || m[1] != strconv.Itoa(archive.Version) {
		t.Errorf("export --help quotes format version %q, the code writes %d", m, archive.Version)
	}
	if m := regexp.MustCompile(`versions 1 to (\d+)`).FindStringSubmatch(help("import")); m == nil || m[1] != strconv.Itoa(archive.Version) {
		t.Errorf("import --help accepts versions 1 to %q, the code reads 1 to %d", m, archive.Version)
	}
	// A guide that quotes the version beside its name quotes the code's.
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("version (\\d+): `archive.Version`").FindAllStringSubmatch(string(text), -1) {
			if m[1] != strconv.Itoa(archive.Version) {
				t.Errorf("%s: %q, archive.Version is %d", f, m[0], archive.Version)
			}
		}
	}
	var quoted []*regexp.Regexp
	for _, e := range exitTable {
		quoted = append(quoted, regexp.MustCompile(`\b(\d+) `+strings.ReplaceAll(regexp.QuoteMeta(e.word), " ", `\s+`)+`\b`))
	}
	statusRE := regexp.MustCompile(`(?:[Ee]xits?(?: with)?(?: status)?|status) (\d+)\b`)
	for _, c := range commands() {
		h := help(c.name)
		for i, re := range quoted {
			for _, m := range re.FindAllStringSubmatch(h, -1) {
				if m[1] != strconv.Itoa(exitTable[i].code) {
					t.Errorf("%s --help: %q, but %s is exit status %d", c.name, m[0], exitTable[i].word, exitTable[i].code)
				}
			}
		}
		for _, m := range statusRE.FindAllStringSubmatch(h, -1) {
			n, _ := strconv.Atoi(m[1])
			if !slices.ContainsFunc(exitTable, func(e struct {
				code          int
				word, meaning string
			}) bool {
				return e.code == n
			}) {
				t.Errorf("%s --help quotes %q, not an exit status", c.name, m[0])
			}
		}
		_, globalLine, _ := strings.Cut(h, "Global flags:")
		if takes := slices.Contains(tenantCommands, c.name); takes != strings.Contains(globalLine, "--tenant") {
			t.Errorf("%s --help: names --tenant %v, takes it %v", c.name, !takes, takes)
		}
	}
	for _, name := range []string{"fork", "rewind", "history"} {
		c, _ := lookup(name)
		if !strings.Contains(c.summary, "conversation") || !strings.Contains(help(name), "a conversation") {
			t.Errorf("%s: help names agent sessions only", name)
		}
	}
}
