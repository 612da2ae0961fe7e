package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/store"
)

var _ store.RecordRestorer = (*Store)(nil)

// RestoreRecords runs fn in one write transaction with a
// store.RecordWriter that puts exported records back exactly as they were
// stored (see store.RecordRestorer). fn may run more than once (a
// whole-transaction retry after a serialization failure).
func (s *Store) RestoreRecords(ctx context.Context, fn func(w store.RecordWriter) error) error {
	if fn == nil {
		return store.Invalid("fn", "must not be nil")
	}
	return s.write(ctx, func(tx *pgTx) error {
		ptx, ok := tx.q.(pgx.Tx)
		if !ok {
			return fmt.Errorf("pgstore: restore outside a transaction")
		}
		w := s.core.NewRecordWriter(ctx, tx, func(tenant string, sess store.Session) (bool, error) {
			n, err := restoreChunk(tx.ctx, ptx, tenant, []store.Session{sess}, true)
			return n > 0, err
		})
		if err := fn(w); err != nil {
			// The transaction rolls back: the keys it made name nothing.
			s.core.DiscardRestoreKeys(ctx, w)
			return err
		}
		return nil
	})
}
