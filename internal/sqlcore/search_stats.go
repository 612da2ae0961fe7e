package sqlcore

import (
	"sync"
)

// The index's statistics (ftsBM25) are read for every ranked search and
// every page scored in Go, and reading a phrase's document count runs
// FTS5's match of that phrase (ftsIDFSQL): on a term in few documents
// that cost more than the search itself (BenchmarkSearchCommonTerm, rare
// ranked at 10,000 documents: 2.3 ms against 1.5 for bm25() on its few
// rows). A store keeps the last statistics it read (ftsStats), keyed by
// the index's state: FTS5's averages record (row count and total size)
// and its structure record, read together in one statement (ftsStateSQL).
// Every committed write to the index changes the structure record: a
// flush adds a segment and moves its write counter forward, a merge
// replaces segments, a delete writes a segment of tombstones, and a
// change of the index's configuration moves its cookie. The one write
// that starts the write counter again is a rebuild (or a delete of
// everything), and Reindex's rebuild (search_maint.go) also sets the
// automerge setting again, which moves the cookie, so that no state after
// it has the bytes of a state before (a migration that rebuilds
// search_fts must do the same). The statistics are a pure function
// of the index's content in the reader's snapshot, so scores are those of
// bm25() to the bit whether they come from the cache or from the index.

// ftsStateSQL reads the averages record (1) and the structure record (10)
// of search_fts, each ” when absent.
const ftsStateSQL = `SELECT coalesce((SELECT block FROM search_fts_data WHERE id = 1), x''), coalesce((SELECT block FROM search_fts_data WHERE id = 10), x'')`

// ftsStatsMax is the number of index states whose statistics a store
// keeps (readers of several snapshots at once each find theirs).
const ftsStatsMax = 4

// ftsStats is a store's cache of the index's statistics.
type ftsStats struct {
	mu sync.Mutex
	// states maps an index state (the averages record, then the
	// structure record) to each phrase's inverse document frequency in
	// that state (a phrase as FTS5's query writes it).
	states map[string]map[string]float64
	// order lists the keys of states, oldest first.
	order []string
}

// stateKey returns the cache key of an index state.
func stateKey(avg, structure []byte) string {
	b := make([]byte, 0, 4+len(avg)+len(structure))
	n := len(avg)
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	b = append(b, avg...)
	return string(append(b, structure...))
}

// lookup returns the cached inverse document frequencies of phrases in
// state key (ok[i] false for a phrase not cached).
func (c *ftsStats) lookup(key string, phrases []string) (idf []float64, ok []bool) {
	idf = make([]float64, len(phrases))
	ok = make([]bool, len(phrases))
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.states[key]
	for i, p := range phrases {
		idf[i], ok[i] = m[p]
	}
	return idf, ok
}

// store records the inverse document frequencies of phrases in state key.
func (c *ftsStats) store(key string, phrases []string, idf []float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states == nil {
		c.states = map[string]map[string]float64{}
	}
	m, ok := c.states[key]
	if !ok {
		if len(c.order) >= ftsStatsMax {
			delete(c.states, c.order[0])
			c.order = c.order[1:]
		}
		m = map[string]float64{}
		c.states[key] = m
		c.order = append(c.order, key)
	}
	if len(m) > 4096 {
		clear(m) // a bound on a long-lived state's phrases
	}
	for i, p := range phrases {
		m[p] = idf[i]
	}
}

// clear forgets every state (a rebuild of the index by this store).
func (c *ftsStats) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states, c.order = nil, nil
}
