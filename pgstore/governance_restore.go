package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// restoreBatch is how many inserts of a restore are sent in one round trip.
const restoreBatch = 500

// Restore inserts governed sessions exactly as given — counters, rate
// window, status and times — in one transaction, and returns how many it
// inserted (see store.Governance.Restore). The inserts are pipelined in
// batches. An id that exists fails the whole request with
// store.ErrConflict, unless req.SkipExisting leaves it untouched. Invalid
// sessions fail the request with store.ErrInvalidInput; nothing is written.
func (g *Governance) Restore(ctx context.Context, req store.RestoreRequest) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	var restored int64
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		restored = 0
		for chunk := range slices.Chunk(req.Sessions, restoreBatch) {
			n, err := restoreChunk(ctx, tx, g.tenant(), chunk, req.SkipExisting)
			if err != nil {
				return err
			}
			restored += n
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return restored, nil
}

// restoreChunk sends the inserts of sessions in one batch and returns how
// many rows they inserted; without skip, an existing id is a conflict.
// The sessions are written as tenant's (ids are global: another tenant's
// session under an id is a conflict, or skipped).
func restoreChunk(ctx context.Context, tx pgx.Tx, tenant string, sessions []store.Session, skip bool) (n int64, err error) {
	b := &pgx.Batch{}
	for i := range sessions {
		sess := &sessions[i]
		b.Queue(govInsertSQL,
			sess.ID, sess.AgentID, nonNil(sess.DelegationChain), sess.DeclaredIntent,
			nonNil(sess.AuthorizedTools), nonNil(sess.AuthorizedCredentials),
			sess.TimeLimit.Milliseconds(), sess.CallBudget, sess.CallsMade, sess.RateLimit,
			sess.RateWindow.Milliseconds(), rowcodec.ToMillis(sess.RateWindowStart), sess.RateWindowCalls,
			string(sess.Sensitivity), string(sess.Status),
			rowcodec.ToMillis(sess.CreatedAt), rowcodec.ToMillis(sess.ExpiresAt),
			slices.Contains(sess.AuthorizedTools, store.AnyTool), tenant)
	}
	br := tx.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for i := range sessions {
		tag, err := br.Exec()
		if err != nil {
			return 0, err
		}
		if tag.RowsAffected() == 0 && !skip {
			return 0, &store.ConflictError{Resource: "session", ID: sessions[i].ID, Reason: "id exists"}
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
