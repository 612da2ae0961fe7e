package sqlcore

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const (
	reportInsertSQL    = `INSERT INTO conversation_reports (session_id, seq, subject, status, report, created_at_ms, tenant) VALUES (?, ?, ?, ?, ?, ?, ?)`
	reportLastSQL      = `SELECT seq FROM conversation_reports WHERE session_id = ? ORDER BY seq DESC LIMIT 1`
	reportDeleteAllSQL = `DELETE FROM conversation_reports WHERE session_id = ?`
	reportAllSQL       = `SELECT seq, report, created_at_ms FROM conversation_reports WHERE session_id = ? AND tenant = ? ORDER BY seq`
	// reportAllKeyedSQL is reportAllSQL with the conversation's data key.
	reportAllKeyedSQL = `SELECT ` + convKeyCol + `seq, report, created_at_ms FROM conversation_reports WHERE session_id = ? AND tenant = ? ORDER BY seq`
)

// reportRow is a conversation_reports row (what is read back).
type reportRow struct {
	Seq         int64  `db:"seq"`
	Report      string `db:"report"`
	CreatedAtMS int64  `db:"created_at_ms"`
	DataKey     string `db:"data_key"`
}

func encodeReports(reports []store.VerificationReport) ([][]byte, error) {
	if len(reports) > store.MaxRecordsPerCall {
		return nil, store.Invalid("reports", "too many entries")
	}
	docs := make([][]byte, len(reports))
	for i, r := range reports {
		d, err := rowcodec.EncodeVerificationReport(fmt.Sprintf("reports[%d]", i), r)
		if err != nil {
			return nil, err
		}
		docs[i] = d
	}
	return docs, nil
}

func (c *Conversations) insertReports(tx Tx, dk *keys.DataKey, id string, first int64, reports []store.VerificationReport, docs [][]byte) error {
	now := rowcodec.ToMillis(c.s.now())
	for i, r := range reports {
		seq := first + int64(i)
		if _, err := tx.Exec(reportInsertSQL, id, seq, r.Subject, r.Status, sealed(dk, docs[i], adReport, seqAD(seq)), now, c.s.tenant); err != nil {
			return err
		}
	}
	return nil
}

// AppendReports appends verification reports (see
// store.Conversations.AppendReports).
func (c *Conversations) AppendReports(ctx context.Context, id string, reports ...store.VerificationReport) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	docs, err := encodeReports(reports)
	if err != nil {
		return err
	}
	return c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		next, err := nextSeq(tx, reportLastSQL, id)
		if err != nil {
			return err
		}
		return c.insertReports(tx, dk, id, next, reports, docs)
	})
}

// SaveReports replaces all verification reports of the conversation (see
// store.Conversations.SaveReports).
func (c *Conversations) SaveReports(ctx context.Context, id string, reports []store.VerificationReport) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	docs, err := encodeReports(reports)
	if err != nil {
		return err
	}
	return c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		if _, err := tx.Exec(reportDeleteAllSQL, id); err != nil {
			return err
		}
		return c.insertReports(tx, dk, id, 0, reports, docs)
	})
}

// Reports returns the conversation's verification reports, oldest first.
func (c *Conversations) Reports(ctx context.Context, id string) ([]store.VerificationReport, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	var rows []reportRow
	if err := c.s.selectRows(ctx, &rows, reportAllKeyedSQL, id, id, c.s.tenant); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return []store.VerificationReport{}, c.mustExist(ctx, id)
	}
	dk, err := c.rowKey(rows[0].DataKey)
	if err != nil {
		return nil, err
	}
	out := make([]store.VerificationReport, len(rows))
	for i, r := range rows {
		doc, err := opened(dk, []byte(r.Report), adReport, seqAD(r.Seq))
		if err != nil {
			return nil, err
		}
		rep, err := rowcodec.DecodeVerificationReport(doc)
		if err != nil {
			return nil, corrupt(id, fmt.Sprintf("verification report %d", r.Seq), err)
		}
		rep.Seq, rep.CreatedAt = r.Seq, rowcodec.FromMillis(r.CreatedAtMS)
		out[i] = rep
	}
	return out, nil
}
