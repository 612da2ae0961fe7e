package sqlstore

import (
	"context"
	"slices"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

const govRestoreSkipSQL = govInsertSQL + ` ON CONFLICT (id) DO NOTHING`

// Restore inserts governed sessions exactly as given — counters, rate
// window, status and times — in one transaction, and returns how many it
// inserted. It is the import side of an export: Create would start the
// sessions afresh. An id that exists fails the whole request with
// store.ErrConflict, unless req.SkipExisting leaves it untouched. Invalid
// sessions fail the request with store.ErrInvalidInput; nothing is written.
func (g *Governance) Restore(ctx context.Context, req store.RestoreRequest) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	var restored int64
	err := g.s.write(ctx, func(tx *wtx) error {
		restored = 0
		query := govInsertSQL
		if req.SkipExisting {
			query = govRestoreSkipSQL
		}
		for i := range req.Sessions {
			n, err := restoreSession(tx, query, g.tenant(), &req.Sessions[i])
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

// restoreSession inserts one validated session with query (govInsertSQL,
// or govRestoreSkipSQL to leave an existing id alone) and returns the
// number of rows inserted. The session is written as tenant's (its id is
// global: another tenant's session under it is a conflict, or skipped).
func restoreSession(tx *wtx, query, tenant string, sess *store.Session) (int64, error) {
	anyTool := 0
	if slices.Contains(sess.AuthorizedTools, store.AnyTool) {
		anyTool = 1
	}
	res, err := tx.exec(query,
		sess.ID, sess.AgentID, mustJSON(sess.DelegationChain), sess.DeclaredIntent,
		mustJSON(sess.AuthorizedTools), mustJSON(sess.AuthorizedCredentials),
		sess.TimeLimit.Milliseconds(), sess.CallBudget, sess.CallsMade, sess.RateLimit,
		sess.RateWindow.Milliseconds(), rowcodec.ToMillis(sess.RateWindowStart), sess.RateWindowCalls,
		string(sess.Sensitivity), string(sess.Status),
		rowcodec.ToMillis(sess.CreatedAt), rowcodec.ToMillis(sess.ExpiresAt), anyTool, tenant)
	if isUniqueViolation(err) {
		return 0, &store.ConflictError{Resource: "session", ID: sess.ID, Reason: "id exists"}
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
