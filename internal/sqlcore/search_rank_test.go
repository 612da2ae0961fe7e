package sqlcore

import (
	"math/rand/v2"
	"testing"
)

// TestRankScoreASCII: the dialect's Rank scores a body of ASCII
// characters as score (the items not yet folded's, FTS5's bm25() to the
// bit) does, on random bodies of both cases where the phrases overlap
// and repeat, through its parameter (rankArg) as Search passes it; it
// leaves a body outside ASCII, and a parameter it cannot read, to bm25().
func TestRankScoreASCII(t *testing.T) {
	// Three phrases (the table of pairs; two share their last pair) and
	// ten (each compared).
	bms := []bm25{
		{idf: []float64{0.7, 1e-6, 2.25}, avgdl: 37.5, phrases: [][]rune{[]rune("abc"), []rune("bca"), []rune("bbc")}}, // two end in "bc"
		{idf: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1}, avgdl: 12.25},
	}
	for _, ph := range []string{"abc", "bca", "cab", "aaa", "bbb", " ab", "ab ", "bc ", "c c", "acb"} {
		bms[1].phrases = append(bms[1].phrases, []rune(ph))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abcABC "
	var param string
	for _, bm := range bms {
		p, ok := rankArg(bm)
		if !ok {
			t.Fatal("rankArg refused ASCII phrases")
		}
		param = p
		for range 5000 {
			b := make([]byte, rng.IntN(90))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			got, ok := RankScore(string(b), param)
			if want := bm.score(string(b)); !ok || got != want {
				t.Fatalf("%d phrases: RankScore(%q) = %v, %v; want %v (score)", len(bm.phrases), b, got, ok, want)
			}
		}
	}
	if _, ok := RankScore("abc café", param); ok {
		t.Error("RankScore scored a body outside ASCII")
	}
	if _, ok := RankScore("abc", `{"p":["ab"],"i":[1],"a":1}`); ok {
		t.Error("RankScore read a phrase of two characters")
	}
	if _, ok := RankScore("abc", `not json`); ok {
		t.Error("RankScore read a parameter that is not one")
	}
	if _, ok := rankArg(bm25{phrases: [][]rune{[]rune("été")}, idf: []float64{1}}); ok {
		t.Error("rankArg took a phrase outside ASCII")
	}
}
