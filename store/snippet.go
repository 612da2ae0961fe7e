package store

import (
	"unicode"
	"unicode/utf8"
)

// Snippet is a part of an item's text with the places where query terms
// occur. Text is data, not markup: whoever shows it escapes it.
type Snippet struct {
	Text string `json:"text"`
	// Matches are the byte ranges of Text where a term occurs, in order,
	// not overlapping.
	Matches []Span `json:"matches,omitempty"`
	// Before and After are true when Text starts after the start, or ends
	// before the end, of the item's text.
	Before bool `json:"before,omitempty"`
	After  bool `json:"after,omitempty"`
}

// Span is a byte range [Start, End) of a snippet's text.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// SnippetWidth is the length of a snippet's text, in bytes, at most (plus
// the rest of a character cut at its end).
const SnippetWidth = 200

// maxSnippetScan bounds how much of a text MakeSnippet searches for terms.
const maxSnippetScan = 1 << 20

// MakeSnippet returns the part of text around the first occurrence of any
// of terms (ignoring case), at most width bytes, with every occurrence of
// a term inside it. Without an occurrence it returns the start of text.
func MakeSnippet(text string, terms []string, width int) Snippet {
	if width <= 0 {
		width = SnippetWidth
	}
	scan := text
	if len(scan) > maxSnippetScan {
		scan = scan[:maxSnippetScan]
	}
	matches := findTerms(scan, terms)
	start := 0
	if len(matches) > 0 {
		// Centre the first match, showing some context before it.
		first := matches[0]
		if ctx := (width - (first.End - first.Start)) / 3; first.Start > ctx {
			start = first.Start - ctx
		}
	}
	start = runeStart(text, start)
	end := min(len(text), start+width)
	end = runeStart(text, end)
	if end <= start && start < len(text) {
		_, n := utf8.DecodeRuneInString(text[start:])
		end = start + n
	}
	s := Snippet{Text: text[start:end], Before: start > 0, After: end < len(text)}
	for _, m := range matches {
		if m.Start >= start && m.End <= end {
			s.Matches = append(s.Matches, Span{Start: m.Start - start, End: m.End - start})
		}
	}
	return s
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// findTerms returns the non-overlapping byte ranges of text where one of
// terms occurs, ignoring case, leftmost first (the longest term at a
// place).
func findTerms(text string, terms []string) []Span {
	var out []Span
	for i := 0; i < len(text); {
		best := 0
		for _, t := range terms {
			if n := prefixFold(text[i:], t); n > best {
				best = n
			}
		}
		if best > 0 {
			out = append(out, Span{Start: i, End: i + best})
			i += best
			continue
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	return out
}

// prefixFold returns the length in bytes of the prefix of s that equals
// term ignoring case, or 0.
func prefixFold(s, term string) int {
	if term == "" {
		return 0
	}
	i := 0
	for _, tr := range term {
		if i >= len(s) {
			return 0
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != tr && unicode.ToLower(r) != unicode.ToLower(tr) {
			return 0
		}
		i += n
	}
	return i
}

// ContainsFold reports whether term occurs in text, ignoring case.
func ContainsFold(text, term string) bool {
	if isASCII(text) && isASCII(term) {
		return containsFoldASCII(text, term)
	}
	for i := 0; i < len(text); {
		if prefixFold(text[i:], term) > 0 {
			return true
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	return false
}

// isASCII reports whether s holds ASCII characters only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// containsFoldASCII is ContainsFold of an ASCII text and term: where both
// are ASCII, unicode.ToLower folds A to Z only (a character outside ASCII
// can fold to an ASCII letter, so both must be).
func containsFoldASCII(text, term string) bool {
	if term == "" {
		return false // as prefixFold: the empty term occurs nowhere
	}
	first := lowerByte(term[0])
	for i := 0; i+len(term) <= len(text); i++ {
		if lowerByte(text[i]) != first {
			continue
		}
		j := 1
		for j < len(term) && lowerByte(text[i+j]) == lowerByte(term[j]) {
			j++
		}
		if j == len(term) {
			return true
		}
	}
	return false
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// SnippetPiece is a run of a snippet's text: an occurrence of a term
// (Match) or the text between occurrences.
type SnippetPiece struct {
	Text  string
	Match bool
}

// Pieces cuts s.Text at its matches, in order, for a surface that shows
// the matches marked (the console's <mark>, sessionctl's «»): the text
// before, each match, the text between, the text after; no piece is
// empty. Matches that are empty, overlap one before them or reach past
// the text are not marked.
func (s Snippet) Pieces() []SnippetPiece {
	var out []SnippetPiece
	last := 0
	for _, m := range s.Matches {
		if m.Start < last || m.End > len(s.Text) || m.Start >= m.End {
			continue
		}
		if m.Start > last {
			out = append(out, SnippetPiece{Text: s.Text[last:m.Start]})
		}
		out = append(out, SnippetPiece{Text: s.Text[m.Start:m.End], Match: true})
		last = m.End
	}
	if last < len(s.Text) {
		out = append(out, SnippetPiece{Text: s.Text[last:]})
	}
	return out
}
