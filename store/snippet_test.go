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
