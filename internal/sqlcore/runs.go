package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const (
	runColumns = `run_id, status, event_count, snapshot, created_at_ms, updated_at_ms`
	runPutSQL  = `INSERT INTO conversation_runs (session_id, ` + runColumns + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, run_id) DO UPDATE SET status = excluded.status,
		event_count = excluded.event_count, snapshot = excluded.snapshot,
		created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms`
	runGetSQL          = `SELECT ` + runColumns + ` FROM conversation_runs WHERE session_id = ? AND run_id = ? AND tenant = ?`
	runAllSQL          = `SELECT ` + runColumns + ` FROM conversation_runs WHERE session_id = ? AND tenant = ? ORDER BY created_at_ms, run_id`
	runAdvanceSQL      = `UPDATE conversation_runs SET event_count = ?, updated_at_ms = ? WHERE session_id = ? AND run_id = ?`
	runEventDeleteSQL  = `DELETE FROM conversation_run_events WHERE session_id = ? AND run_id = ?`
	runEventInsertSQL  = `INSERT INTO conversation_run_events (session_id, run_id, seq, at_ms, event, tenant) VALUES (?, ?, ?, ?, ?, ?)`
	runEventLastSQL    = `SELECT seq FROM conversation_run_events WHERE session_id = ? AND run_id = ? ORDER BY seq DESC LIMIT 1`
	runEventsOfRunSQL  = `SELECT run_id, seq, at_ms, event FROM conversation_run_events WHERE session_id = ? AND run_id = ? ORDER BY seq`
	runEventsOfConvSQL = `SELECT run_id, seq, at_ms, event FROM conversation_run_events WHERE session_id = ? ORDER BY run_id, seq`
	// The reads of runs, with the conversation's data key (conv_crypt.go).
	runGetKeyedSQL = `SELECT ` + convKeyCol + runColumns + ` FROM conversation_runs WHERE session_id = ? AND run_id = ? AND tenant = ?`
	runAllKeyedSQL = `SELECT ` + convKeyCol + runColumns + ` FROM conversation_runs WHERE session_id = ? AND tenant = ? ORDER BY created_at_ms, run_id`
)

// runRow is a conversation_runs row.
type runRow struct {
	RunID       string `db:"run_id"`
	Status      string `db:"status"`
	EventCount  int64  `db:"event_count"`
	Snapshot    string `db:"snapshot"`
	CreatedAtMS int64  `db:"created_at_ms"`
	UpdatedAtMS int64  `db:"updated_at_ms"`
	DataKey     string `db:"data_key"` // keyed reads only
}

// runEventRow is a conversation_run_events row.
type runEventRow struct {
	RunID string `db:"run_id"`
	Seq   int64  `db:"seq"`
	AtMS  int64  `db:"at_ms"`
	Event string `db:"event"`
	// DataKey is the conversation's data key (keyed reads only).
	DataKey string `db:"data_key"`
}

func (r *runRow) snapshot(id string, dk *keys.DataKey) (store.RunSnapshot, error) {
	doc, err := opened(dk, []byte(r.Snapshot), adRun, r.RunID)
	if err != nil {
		return store.RunSnapshot{}, err
	}
	s, err := rowcodec.DecodeRunSnapshot(doc)
	if err != nil {
		return s, corrupt(id, fmt.Sprintf("run %q snapshot", r.RunID), err)
	}
	s.ID, s.Status, s.EventCount = r.RunID, r.Status, r.EventCount
	s.CreatedAt, s.UpdatedAt = rowcodec.FromMillis(r.CreatedAtMS), rowcodec.FromMillis(r.UpdatedAtMS)
	return s, nil
}

func (r *runEventRow) event(id string, dk *keys.DataKey) (store.RunEvent, error) {
	doc, err := opened(dk, []byte(r.Event), adRunEvent, r.RunID, seqAD(r.Seq))
	if err != nil {
		return store.RunEvent{}, err
	}
	if !json.Valid(doc) {
		return store.RunEvent{}, corrupt(id, fmt.Sprintf("run %q event %d", r.RunID, r.Seq), errors.New("invalid JSON"))
	}
	return store.RunEvent{Seq: r.Seq, Timestamp: rowcodec.FromMillis(r.AtMS), Event: json.RawMessage(doc)}, nil
}

// sealRunEvent is a run event's stored document.
func sealRunEvent(dk *keys.DataKey, doc []byte, runID string, seq int64) string {
	return sealed(dk, doc, adRunEvent, runID, seqAD(seq))
}

// PutRuns inserts or replaces run records by run id, snapshot and events,
// in one transaction (see store.Conversations.PutRuns).
func (c *Conversations) PutRuns(ctx context.Context, id string, runs ...store.RunRecord) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	if len(runs) > store.MaxRecordsPerCall {
		return store.Invalid("runs", "too many entries")
	}
	now := c.s.now()
	type prepared struct {
		rec    store.RunRecord
		snap   []byte
		events [][]byte
	}
	all := make([]prepared, len(runs))
	for i, r := range runs {
		rec, snap, events, err := store.NormalizeRun(fmt.Sprintf("runs[%d]", i), r, now)
		if err != nil {
			return err
		}
		all[i] = prepared{rec, snap, events}
	}
	return c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		for _, p := range all {
			s := p.rec.Snapshot
			if _, err := tx.Exec(runPutSQL, id, s.ID, s.Status, s.EventCount, sealed(dk, p.snap, adRun, s.ID),
				rowcodec.ToMillis(s.CreatedAt), rowcodec.ToMillis(s.UpdatedAt), c.s.tenant); err != nil {
				return err
			}
			if _, err := tx.Exec(runEventDeleteSQL, id, s.ID); err != nil {
				return err
			}
			for j, ev := range p.rec.Events {
				if _, err := tx.Exec(runEventInsertSQL, id, s.ID, ev.Seq, rowcodec.ToMillis(ev.Timestamp), sealRunEvent(dk, p.events[j], s.ID, ev.Seq), c.s.tenant); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// AppendRunEvents appends events to a run (see
// store.Conversations.AppendRunEvents). Only the new rows and the
// snapshot's counters are written.
func (c *Conversations) AppendRunEvents(ctx context.Context, id, runID string, events ...store.RunEvent) (int64, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, err
	}
	if runID == "" {
		return 0, store.Invalid("run_id", "must not be empty")
	}
	if len(events) > store.MaxRecordsPerCall {
		return 0, store.Invalid("events", "too many entries")
	}
	events, docs, err := rowcodec.EncodeRunEvents("events", events, c.s.now())
	if err != nil {
		return 0, err
	}
	var first int64
	err = c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		var run runRow
		if err := tx.Get(&run, runGetSQL, id, runID, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Resource: "run", ID: runID}
		} else if err != nil {
			return err
		}
		// The runtime numbers events by its cumulative count, which may
		// be ahead of the stored events when it trimmed some.
		next, err := nextSeq(tx, runEventLastSQL, id, runID)
		if err != nil {
			return err
		}
		next = max(next, run.EventCount)
		for i, ev := range events {
			seq := next + int64(i)
			if _, err := tx.Exec(runEventInsertSQL, id, runID, seq, rowcodec.ToMillis(ev.Timestamp), sealRunEvent(dk, docs[i], runID, seq), c.s.tenant); err != nil {
				return err
			}
		}
		count := next + int64(len(events))
		if _, err := tx.Exec(runAdvanceSQL, count, rowcodec.ToMillis(c.s.now()), id, runID); err != nil {
			return err
		}
		first = next
		return nil
	})
	if err != nil {
		return 0, err
	}
	return first, nil
}

// Run returns one run record with its events, as one snapshot.
func (c *Conversations) Run(ctx context.Context, id, runID string) (store.RunRecord, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.RunRecord{}, err
	}
	if runID == "" {
		return store.RunRecord{}, store.Invalid("run_id", "must not be empty")
	}
	var out store.RunRecord
	err := c.s.readTx(ctx, func(r Tx) error {
		var run runRow
		if err := r.Get(&run, runGetKeyedSQL, id, id, runID, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			var n int64
			if err := r.Get(&n, convExistsSQL, id, c.s.tenant); err != nil {
				return err
			}
			if n == 0 {
				return notFound(id)
			}
			return &store.NotFoundError{Resource: "run", ID: runID}
		} else if err != nil {
			return err
		}
		dk, err := c.rowKey(run.DataKey)
		if err != nil {
			return err
		}
		snap, err := run.snapshot(id, dk)
		if err != nil {
			return err
		}
		var evs []runEventRow
		if err := r.Select(&evs, runEventsOfRunSQL, id, runID); err != nil {
			return err
		}
		out = store.RunRecord{Snapshot: snap, Events: make([]store.RunEvent, len(evs))}
		for i := range evs {
			if out.Events[i], err = evs[i].event(id, dk); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// Runs returns every run record of the conversation with its events, as
// one snapshot (see store.Conversations.Runs).
func (c *Conversations) Runs(ctx context.Context, id string) ([]store.RunRecord, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	var out []store.RunRecord
	err := c.s.readTx(ctx, func(r Tx) error {
		var runs []runRow
		if err := r.Select(&runs, runAllKeyedSQL, id, id, c.s.tenant); err != nil {
			return err
		}
		if len(runs) == 0 {
			var n int64
			if err := r.Get(&n, convExistsSQL, id, c.s.tenant); err != nil {
				return err
			}
			if n == 0 {
				return notFound(id)
			}
			out = []store.RunRecord{}
			return nil
		}
		dk, err := c.rowKey(runs[0].DataKey)
		if err != nil {
			return err
		}
		var evs []runEventRow
		if err := r.Select(&evs, runEventsOfConvSQL, id); err != nil {
			return err
		}
		byRun := make(map[string][]store.RunEvent, len(runs))
		for i := range evs {
			ev, err := evs[i].event(id, dk)
			if err != nil {
				return err
			}
			byRun[evs[i].RunID] = append(byRun[evs[i].RunID], ev)
		}
		out = make([]store.RunRecord, len(runs))
		for i := range runs {
			snap, err := runs[i].snapshot(id, dk)
			if err != nil {
				return err
			}
			events := byRun[runs[i].RunID]
			if events == nil {
				events = []store.RunEvent{}
			}
			out[i] = store.RunRecord{Snapshot: snap, Events: events}
		}
		return nil
	})
	return out, err
}
