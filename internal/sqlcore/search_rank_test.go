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
	bm := bm25{idf: []float64{0.7, 1e-6, 2.25}, avgdl: 37.5,
		phrases: [][]rune{[]rune("abc"), []rune("bca"), []rune("c a")}}
	param, ok := rankArg(bm)
	if !ok {
		t.Fatal("rankArg refused ASCII phrases")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abcABC "
	for range 5000 {
		b := make([]byte, rng.IntN(90))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		got, ok := RankScore(string(b), param)
		if want := bm.score(string(b)); !ok || got != want {
			t.Fatalf("RankScore(%q) = %v, %v; want %v (score)", b, got, ok, want)
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
