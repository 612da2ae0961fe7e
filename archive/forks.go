package archive

// Forks before their parents. A section lists its sessions in key order,
// so a fork whose id sorts before its lineage parent's comes first; the
// store restores a record as a fork only of a session it holds already
// (store.RecordWriter), so such a fork lost its lineage. The import now
// puts such a fork aside and restores it at the end of its section, after
// its parent (and after the parent's own parent, when that was put aside
// too). What is put aside is the record as the document holds it (sealed
// content stays sealed) in a temporary file, so that memory still does not
// grow with the document; only its key and its parent's stay in memory.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// forkQueue is the set of a section's forks put aside until the end of
// the section.
type forkQueue struct {
	restored map[string]bool // the lineage keys restored (or skipped) so far
	items    []aside
	index    map[string]int // lineage key -> index in items
	spool    *os.File
	size     int64
}

// aside is one fork put aside: its lineage key, its parent's, its field
// name in the document and where its JSON is in the spool file.
type aside struct {
	key, parent, field string
	off, n             int64
}

func newForkQueue() *forkQueue {
	return &forkQueue{restored: map[string]bool{}, index: map[string]int{}}
}

// waits reports whether a record with this lineage parent must wait: an
// import that writes (not a dry run) has not restored the parent yet.
func (q *forkQueue) waits(x *importer, parent string) bool {
	return x.w != nil && !q.restored[parent]
}

// add puts the record v (as the document holds it) aside.
func (q *forkQueue) add(key, parent, field string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if q.spool == nil {
		if q.spool, err = os.CreateTemp("", "sessionstore-import-forks-*.json"); err != nil {
			return err
		}
	}
	if _, err := q.spool.WriteAt(b, q.size); err != nil {
		return fmt.Errorf("put a fork aside: %w", err)
	}
	q.index[key] = len(q.items)
	q.items = append(q.items, aside{key: key, parent: parent, field: field, off: q.size, n: int64(len(b))})
	q.size += int64(len(b))
	return nil
}

// done records that the record with this lineage key is restored (or
// skipped as existing).
func (q *forkQueue) done(key string) { q.restored[key] = true }

// flush restores the records put aside, each after its parent when that
// was put aside too (a cycle, which no store writes, is restored in
// document order). restore decodes and restores one record from its JSON.
func (q *forkQueue) flush(restore func(a aside, raw []byte) error) error {
	state := make([]uint8, len(q.items)) // 0 waiting, 1 on the way, 2 restored
	var visit func(i int) error
	visit = func(i int) error {
		if state[i] != 0 {
			return nil
		}
		state[i] = 1
		if j, ok := q.index[q.items[i].parent]; ok && state[j] == 0 {
			if err := visit(j); err != nil {
				return err
			}
		}
		a := q.items[i]
		raw := make([]byte, a.n)
		if _, err := q.spool.ReadAt(raw, a.off); err != nil && err != io.EOF {
			return fmt.Errorf("read a fork put aside: %w", err)
		}
		if err := restore(a, raw); err != nil {
			return err
		}
		q.done(a.key)
		state[i] = 2
		return nil
	}
	for i := range q.items {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// close removes the spool file.
func (q *forkQueue) close() {
	if q.spool != nil {
		q.spool.Close()
		os.Remove(q.spool.Name())
		q.spool = nil
	}
}

// agentLineageKey names an agent session (app, user, session) for the
// queue; a fork's parent is in the same app and user.
func agentLineageKey(app, user, session string) string {
	return app + "\x00" + user + "\x00" + session
}
