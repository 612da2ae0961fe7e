package main

// Reading README.md: its fenced blocks, their transcript directives, the
// commands and outputs of a transcript, and the words of a command line
// (readme_test.go describes the conventions).

import (
	"fmt"
	"regexp"
	"strings"
)

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
				return nil, fmt.Errorf("line %d: a transcript directive must stand right before a block's opening fence", i+1)
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
			return nil, fmt.Errorf("line %d: the block is not closed", b.line)
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
