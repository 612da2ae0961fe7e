package main

// Comparing a transcript's output with what sessionctl printed: "..."
// elisions, UUID bindings, digests, and the numbers vary and times vary
// directives (readme_test.go describes the conventions).

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
)

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

func TestREADMETranscriptMatching(t *testing.T) {
	t.Parallel()
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
