package sqlcore

import (
	"encoding/json"
	"math/bits"
	"sync"
)

// SQLite ranks a search's hits by -bm25(search_fts). The index keeps no
// positions (detail=column, migration 32), so FTS5's bm25() finds a
// phrase's frequency in a document by reading the document's body from
// search_docs and running the trigram tokenizer over all of it, for every
// hit: on a term found in most documents that is most of a search's time
// (BenchmarkSearchCommonTerm's split). The same score, to the bit, comes
// from the index's statistics (ftsBM25, read once per search) and a count
// of the phrases' trigrams in the body (bm25.score), which Go does many
// times faster: Search passes those statistics to the dialect's Rank
// function (SQLite: sessionstore_rank, registered with the driver), which
// scores a body of ASCII characters itself and leaves any other body to
// bm25() (a NULL that coalesce replaces), where Go's case folding
// (unicode.ToLower) and the tokenizer's could differ.

// rankParams is what a Rank function reads from its parameter: the
// index's statistics for one query (bm25).
type rankParams struct {
	Phrases []string  `json:"p"`
	IDF     []float64 `json:"i"`
	AvgDL   float64   `json:"a"`
}

// rankArg returns the parameter of the Rank function for bm, and false
// when a phrase is not of ASCII characters (bm25() then ranks every hit).
func rankArg(bm bm25) (string, bool) {
	p := rankParams{IDF: bm.idf, AvgDL: bm.avgdl}
	for _, ph := range bm.phrases {
		for _, c := range ph {
			if c >= 0x80 {
				return "", false
			}
		}
		p.Phrases = append(p.Phrases, string(ph))
	}
	b, err := json.Marshal(p) // floats in the shortest form that reads back the same
	if err != nil {
		return "", false
	}
	return string(b), true
}

// rankCache keeps the parsed parameters of the last few queries, so that
// a Rank function called once per hit parses its parameter once.
var rankCache struct {
	sync.Mutex
	m map[string]*rankQuery
}

// rankQuery is a parsed parameter of the Rank function: the statistics,
// each phrase as three bytes in a uint32 (keys), and for up to 8 phrases
// a table of the phrases that end in each pair of bytes (pairs: bit i for
// phrase i), so that most of a body's trigrams are passed over with one
// look-up.
type rankQuery struct {
	bm    bm25
	keys  []uint32
	pairs *[1 << 16]uint8
}

func newRankQuery(bm bm25) *rankQuery {
	rq := &rankQuery{bm: bm}
	for _, ph := range bm.phrases {
		rq.keys = append(rq.keys, uint32(ph[0])<<16|uint32(ph[1])<<8|uint32(ph[2]))
	}
	if len(rq.keys) <= 8 {
		rq.pairs = new([1 << 16]uint8)
		for i, k := range rq.keys {
			rq.pairs[k&0xFFFF] |= 1 << i
		}
	}
	return rq
}

// RankScore is the dialect's Rank function: -bm25(search_fts) of a
// document of text body for the query of param (Search's argument), and
// true; false when body holds a character outside ASCII or param is not a
// parameter of Search (the caller then returns NULL, and bm25() ranks the
// document).
func RankScore(body, param string) (float64, bool) {
	for i := 0; i < len(body); i++ {
		if body[i] >= 0x80 {
			return 0, false
		}
	}
	rankCache.Lock()
	rq, ok := rankCache.m[param]
	rankCache.Unlock()
	if !ok {
		var p rankParams
		if err := json.Unmarshal([]byte(param), &p); err != nil || len(p.IDF) != len(p.Phrases) {
			return 0, false
		}
		bm := bm25{idf: p.IDF, avgdl: p.AvgDL}
		for _, ph := range p.Phrases {
			if len(ph) != 3 {
				return 0, false
			}
			bm.phrases = append(bm.phrases, []rune(ph))
		}
		rq = newRankQuery(bm)
		rankCache.Lock()
		if rankCache.m == nil || len(rankCache.m) >= 64 {
			rankCache.m = map[string]*rankQuery{}
		}
		rankCache.m[param] = rq
		rankCache.Unlock()
	}
	return rq.scoreASCII(body), true
}

// scoreASCII is bm25.score for a body of ASCII characters (its case
// folded as the trigram tokenizer folds it: A to Z only), in one pass over
// it: each trigram of the body, as three bytes, is compared with the
// phrases that end in its last two (all of them when there are more than
// 8).
func (rq *rankQuery) scoreASCII(body string) float64 {
	var fbuf [16]float64
	freq := fbuf[:0]
	for range rq.keys {
		freq = append(freq, 0)
	}
	var k uint32
	for j := 0; j < len(body); j++ {
		c := body[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k = (k<<8 | uint32(c)) & 0xFFFFFF
		if j < 2 {
			continue
		}
		if rq.pairs != nil {
			for m := rq.pairs[k&0xFFFF]; m != 0; m &= m - 1 {
				if i := bits.TrailingZeros8(m); rq.keys[i] == k {
					freq[i]++
				}
			}
			continue
		}
		for i, p := range rq.keys {
			if k == p {
				freq[i]++
			}
		}
	}
	return rq.bm.combine(freq, float64(max(len(body)-2, 0)))
}
