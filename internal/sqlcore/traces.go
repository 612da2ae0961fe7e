package sqlcore

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const (
	traceInsertSQL    = `INSERT INTO conversation_trace_events (session_id, seq, kind, name, event, created_at_ms, tenant) VALUES (?, ?, ?, ?, ?, ?, ?)`
	traceLastSQL      = `SELECT seq FROM conversation_trace_events WHERE session_id = ? ORDER BY seq DESC LIMIT 1`
	traceDeleteAllSQL = `DELETE FROM conversation_trace_events WHERE session_id = ?`
	traceRangeSQL     = `SELECT seq, event, created_at_ms FROM conversation_trace_events WHERE session_id = ? AND tenant = ? AND seq >= ? ORDER BY seq LIMIT ?`
	// traceRangeKeyedSQL is traceRangeSQL with the conversation's data key.
	traceRangeKeyedSQL = `SELECT ` + convKeyCol + `seq, event, created_at_ms FROM conversation_trace_events WHERE session_id = ? AND tenant = ? AND seq >= ? ORDER BY seq LIMIT ?`
)

// traceRow is a conversation_trace_events row (what is read back).
type traceRow struct {
	Seq         int64  `db:"seq"`
	Event       string `db:"event"`
	CreatedAtMS int64  `db:"created_at_ms"`
	DataKey     string `db:"data_key"`
}

func encodeTraces(events []store.TraceEvent) ([][]byte, error) {
	if len(events) > store.MaxRecordsPerCall {
		return nil, store.Invalid("events", "too many entries")
	}
	docs := make([][]byte, len(events))
	for i, ev := range events {
		d, err := rowcodec.EncodeTraceEvent(fmt.Sprintf("events[%d]", i), ev)
		if err != nil {
			return nil, err
		}
		docs[i] = d
	}
	return docs, nil
}

func (c *Conversations) insertTraces(tx Tx, dk *keys.DataKey, id string, first int64, events []store.TraceEvent, docs [][]byte) error {
	now := rowcodec.ToMillis(c.s.now())
	for i, ev := range events {
		seq := first + int64(i)
		if _, err := tx.Exec(traceInsertSQL, id, seq, ev.Kind, ev.Name, sealed(dk, docs[i], adTrace, seqAD(seq)), now, c.s.tenant); err != nil {
			return err
		}
	}
	return nil
}

// AppendTraces appends trace events (see store.Conversations.AppendTraces).
// Only the new rows are written.
func (c *Conversations) AppendTraces(ctx context.Context, id string, events ...store.TraceEvent) (int64, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, err
	}
	docs, err := encodeTraces(events)
	if err != nil {
		return 0, err
	}
	var first int64
	err = c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		next, err := nextSeq(tx, traceLastSQL, id)
		if err != nil {
			return err
		}
		if err := c.insertTraces(tx, dk, id, next, events, docs); err != nil {
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

// SaveTraces replaces all trace events of the conversation (see
// store.Conversations.SaveTraces).
func (c *Conversations) SaveTraces(ctx context.Context, id string, events []store.TraceEvent) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	docs, err := encodeTraces(events)
	if err != nil {
		return err
	}
	return c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		if _, err := tx.Exec(traceDeleteAllSQL, id); err != nil {
			return err
		}
		return c.insertTraces(tx, dk, id, 0, events, docs)
	})
}

// Traces returns trace events from position from on (see
// store.Conversations.Traces).
func (c *Conversations) Traces(ctx context.Context, id string, from int64, limit int) ([]store.TraceEvent, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	if from < 0 {
		return nil, store.Invalid("from", "must not be negative")
	}
	if limit < 0 {
		return nil, store.Invalid("limit", "must not be negative")
	}
	lim := c.s.limit(limit)
	var rows []traceRow
	if err := c.s.selectRows(ctx, &rows, traceRangeKeyedSQL, id, id, c.s.tenant, from, lim); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return []store.TraceEvent{}, c.mustExist(ctx, id)
	}
	dk, err := c.rowKey(rows[0].DataKey)
	if err != nil {
		return nil, err
	}
	out := make([]store.TraceEvent, len(rows))
	for i, r := range rows {
		doc, err := opened(dk, []byte(r.Event), adTrace, seqAD(r.Seq))
		if err != nil {
			return nil, err
		}
		ev, err := rowcodec.DecodeTraceEvent(doc)
		if err != nil {
			return nil, corrupt(id, fmt.Sprintf("trace event %d", r.Seq), err)
		}
		ev.Seq, ev.CreatedAt = r.Seq, rowcodec.FromMillis(r.CreatedAtMS)
		out[i] = ev
	}
	return out, nil
}
