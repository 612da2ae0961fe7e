package store

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// slowContainsFold is ContainsFold without its ASCII path.
func slowContainsFold(text, term string) bool {
	for i := 0; i < len(text); {
		if prefixFold(text[i:], term) > 0 {
			return true
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	return false
}

// TestContainsFoldASCII: ContainsFold's path for ASCII text and terms
// answers as the rune-by-rune fold does, on random texts of a few
// letters (so that terms occur, in both cases, at the ends too), the
// empty term and texts with characters outside ASCII that fold to ASCII
// letters (the Kelvin sign to k), which that path leaves to the other.
func TestContainsFoldASCII(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abAB K"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		text, term := word(rng.IntN(12)), word(rng.IntN(4))
		if got, want := ContainsFold(text, term), slowContainsFold(text, term); got != want {
			t.Fatalf("ContainsFold(%q, %q) = %v, want %v", text, term, got, want)
		}
	}
	for _, c := range []struct {
		text, term string
		want       bool
	}{
		{"abc", "", false}, {"", "", false}, {"", "a", false}, {"ABC", "bc", true}, {"abc", "ABC", true},
		{"abc", "abcd", false}, {"x\u212Ay", "XKY", true}, {"okay", "\u212A", true}, {"ok", "kk", false},
	} {
		if got := ContainsFold(c.text, c.term); got != c.want {
			t.Errorf("ContainsFold(%q, %q) = %v, want %v", c.text, c.term, got, c.want)
		}
	}
}
