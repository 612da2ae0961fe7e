package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// WithReadOnly opens the store read-only, enforced by SQLite itself: every
// connection is opened with mode=ro and query_only, the store starts no
// writer, takes no writer file lock and runs no migration. Every write
// method returns an error matching store.ErrReadOnly (and store.ErrStorage),
// and HealthCheck reports store.ErrReadOnly once the read succeeded. The
// database must exist and its schema must be this binary's latest (open it
// once writable, or run sessionctl migrate up, to migrate it). It is for
// inspection tools such as the web console; OpenDB refuses it.
func WithReadOnly(on bool) Option {
	return func(c *config) { c.readOnly = on }
}

// errReadOnlyStore is what every write of a read-only store returns.
var errReadOnlyStore = fmt.Errorf("sqlstore: %w: the store was opened read-only", store.ErrReadOnly)

// openReadOnly is Open with WithReadOnly(true).
func openReadOnly(ctx context.Context, path string, cfg config) (*Store, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sqlstore: read-only open of %s: %w", path, err)
		}
		return nil, fmt.Errorf("sqlstore: %w: %w", store.ErrReadOnly, err)
	}
	if fi.IsDir() {
		return nil, store.Invalid("path", "is a directory")
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("%w: the file is empty", store.ErrNotSessionStore)
	}
	if err := checkHeader(path, fi.Size()); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, path: path, owned: true, govCache: newGovCache(govCacheSize)}
	s.newCore()
	s.reads, err = openReadPool(readOnlyDSN(path, &cfg))
	if err != nil {
		return nil, mapErr(err)
	}
	s.reads.SetMaxOpenConns(cfg.readers)
	s.reads.SetMaxIdleConns(cfg.readers)
	if err := checkSchema(ctx, s.reads.DB); err != nil {
		s.reads.Close()
		return nil, err
	}
	current, err := dbVersion(ctx, s.reads.DB)
	if err != nil {
		s.reads.Close()
		return nil, err
	}
	latest, err := migrations.Latest()
	if err != nil {
		s.reads.Close()
		return nil, err
	}
	if current < latest {
		s.reads.Close()
		return nil, fmt.Errorf("sqlstore: %w: the schema is at version %d and this binary needs %d; a read-only store cannot migrate it (open it once writable, or run sessionctl migrate up)",
			store.ErrReadOnly, current, latest)
	}
	return s, nil
}

// readOnlyDSN opens every connection of the pool read-only (mode=ro: SQLite
// refuses any write with SQLITE_READONLY) and query-only.
func readOnlyDSN(path string, cfg *config) string {
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)",
		escapePath(path), cfg.busyTimeout.Milliseconds())
}

// ReadOnly reports whether the store was opened with WithReadOnly.
func (s *Store) ReadOnly() bool { return s.cfg.readOnly }
