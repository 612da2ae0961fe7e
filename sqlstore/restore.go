package sqlstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

var _ store.RecordRestorer = (*Store)(nil)

// RestoreRecords runs fn in one write transaction with a
// store.RecordWriter that puts exported records back exactly as they were
// stored (see store.RecordRestorer). The transaction holds the database's
// write lock until fn returns: other writers, in this process and others,
// wait meanwhile. fn may run more than once (a whole-transaction retry
// after a busy error).
func (s *Store) RestoreRecords(ctx context.Context, fn func(w store.RecordWriter) error) error {
	if fn == nil {
		return store.Invalid("fn", "must not be nil")
	}
	return s.write(ctx, func(tx *wtx) error {
		w := s.core.NewRecordWriter(ctx, tx, func(tenant string, sess store.Session) (bool, error) {
			n, err := restoreSession(tx, govRestoreSkipSQL, tenant, &sess)
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
