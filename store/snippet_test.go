package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMakeSnippet(t *testing.T) {
	for _, tc := range []struct {
		text    string
		terms   []string
		width   int
		want    string
		matches []string
		before  bool
		after   bool
	}{
		{"Kafka lag is high", []string{"kafka"}, 100, "Kafka lag is high", []string{"Kafka"}, false, false},
		{"no match here", []string{"zzz"}, 5, "no ma", nil, false, true},
		{"私は東京都に住んでいます", []string{"東京"}, 100, "私は東京都に住んでいます", []string{"東京"}, false, false},
		{strings.Repeat("x", 100) + " needle " + strings.Repeat("y", 100), []string{"NEEDLE"}, 30, "", []string{"needle"}, true, true},
		{"ab ab ab", []string{"ab", "b a"}, 100, "ab ab ab", []string{"ab", "ab", "ab"}, false, false},
		{"ÉCOLE école", []string{"école"}, 100, "ÉCOLE école", []string{"ÉCOLE", "école"}, false, false},
		{"", []string{"x"}, 10, "", nil, false, false},
	} {
		s := MakeSnippet(tc.text, tc.terms, tc.width)
		if tc.want != "" && s.Text != tc.want {
			t.Errorf("%q: text %q, want %q", tc.text, s.Text, tc.want)
		}
		if !utf8.ValidString(s.Text) || len(s.Text) > tc.width+utf8.UTFMax {
			t.Errorf("%q: text %q not valid or too long", tc.text, s.Text)
		}
		var got []string
		for _, m := range s.Matches {
			got = append(got, s.Text[m.Start:m.End])
		}
		if strings.Join(got, "|") != strings.Join(tc.matches, "|") {
			t.Errorf("%q: matches %q, want %q", tc.text, got, tc.matches)
		}
		if s.Before != tc.before || s.After != tc.after {
			t.Errorf("%q: before %v after %v, want %v %v", tc.text, s.Before, s.After, tc.before, tc.after)
		}
	}
}

func TestSearchTermsAndCursor(t *testing.T) {
	if got := SearchTerms("  Kafka  kafka lag\tLAG 東京 "); strings.Join(got, ",") != "Kafka,lag,東京" {
		t.Fatalf("terms %q", got)
	}
	c := SearchCursor{Order: SearchByRank, Score: 0.1 + 0.2, Doc: 42}
	d, err := DecodeSearchCursor(c.Encode())
	if err != nil || d != c {
		t.Fatalf("cursor round trip: %+v %v", d, err)
	}
	for _, bad := range []string{"", "x", c.Encode() + "x", SearchCursor{Order: "other", Doc: 1}.Encode(), SearchCursor{Order: SearchByTime}.Encode()} {
		if _, err := DecodeSearchCursor(bad); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

// TestSnippetPieces: the text is cut at its matches, in order, with no
// empty piece; bad matches (empty, overlapping, past the end) are not
// marked and their text stays.
func TestSnippetPieces(t *testing.T) {
	for _, c := range []struct {
		s    Snippet
		want string
	}{
		{Snippet{Text: "hello world"}, "hello world"},
		{Snippet{Text: "hello world", Matches: []Span{{0, 5}}}, "[hello] world"},
		{Snippet{Text: "hello world", Matches: []Span{{6, 11}}}, "hello [world]"},
		{Snippet{Text: "ab", Matches: []Span{{0, 1}, {1, 2}}}, "[a][b]"},
		{Snippet{Text: "abcdef", Matches: []Span{{1, 3}, {2, 4}, {4, 4}, {5, 9}}}, "a[bc]def"},
		{Snippet{}, ""},
	} {
		var b strings.Builder
		for _, p := range c.s.Pieces() {
			if p.Text == "" {
				t.Errorf("%+v: an empty piece", c.s)
			}
			if p.Match {
				b.WriteString("[" + p.Text + "]")
			} else {
				b.WriteString(p.Text)
			}
		}
		if b.String() != c.want {
			t.Errorf("%+v: %q, want %q", c.s, b.String(), c.want)
		}
	}
}
