package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// WithSweeper runs a background sweeper (store.Retention.Sweep every
// cfg.Interval) while the store is open. Sweepers of every process on the
// file share one lease: one of them sweeps at a time, and another takes
// over when its holder stops renewing it. Close stops the sweeper at the
// end of its batch and gives the lease up.
func WithSweeper(cfg store.SweeperConfig) Option {
	return func(c *config) { c.sweeper = &cfg }
}

// Retention returns the lifecycle facet: policies, holds and sweeps.
func (s *Store) Retention() store.Retention { return s.core.Retention() }

func (s *Store) startSweeper() error {
	if s.cfg.sweeper == nil {
		return nil
	}
	sw, err := s.core.StartSweeper(*s.cfg.sweeper)
	s.sweeper = sw
	return err
}

// space measures the file: the pages in use and the free pages.
func (s *Store) space(ctx context.Context) (sqlcore.SpaceInfo, error) {
	var pages, free, size int64
	err := s.readTx(ctx, func(r *rtx) error {
		if err := r.get(&pages, "PRAGMA page_count"); err != nil {
			return err
		}
		if err := r.get(&free, "PRAGMA freelist_count"); err != nil {
			return err
		}
		return r.get(&size, "PRAGMA page_size")
	})
	if err != nil {
		return sqlcore.SpaceInfo{}, err
	}
	return sqlcore.SpaceInfo{Used: (pages - free) * size, Free: free * size}, nil
}

// reclaimStep is how many free pages one transaction of reclaim gives
// back, so that it holds the writer for a short time only.
const reclaimStep = 512

// reclaim gives the free pages back to the file system with
// incremental_vacuum, reclaimStep pages per write transaction, when the
// file is in incremental auto-vacuum mode (new files are; an older file
// becomes so at its next VACUUM, such as sessionctl gc --vacuum). It
// returns the bytes given back: 0 for a file in another mode.
func (s *Store) reclaim(ctx context.Context) (int64, error) {
	var mode, size int64
	if err := s.get(ctx, &mode, "PRAGMA auto_vacuum"); err != nil || mode != 2 {
		return 0, err
	}
	if err := s.get(ctx, &size, "PRAGMA page_size"); err != nil {
		return 0, err
	}
	var freed int64
	for {
		var before, after int64
		err := s.write(ctx, func(tx *wtx) error {
			if err := tx.get(&before, "PRAGMA freelist_count"); err != nil || before == 0 {
				return err
			}
			if _, err := tx.exec(fmt.Sprintf("PRAGMA incremental_vacuum(%d)", reclaimStep)); err != nil {
				return err
			}
			return tx.get(&after, "PRAGMA freelist_count")
		})
		if err != nil {
			return freed, err
		}
		if before == 0 || after >= before {
			return freed, nil
		}
		freed += (before - after) * size
		if err := ctx.Err(); err != nil {
			return freed, err
		}
	}
}

// compactStep is how many pages of an FTS5 index one transaction of
// compactIndexes merges at most, so that it holds the writer for a short
// time only.
const compactStep = 64

// ftsTablesSQL lists the FTS5 tables of the file, whatever their names
// and layout.
const ftsTablesSQL = `SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'`

// compactIndexes merges the segments of every FTS5 index of the file
// ('merge' commands, compactStep pages per write transaction, until one
// does nothing): a deleted row's entries, and the pages they fill, stay
// in an FTS5 index until its segments are merged, so without it a size
// budget measures no space freed by the index when it removes sessions.
// The first command of each index starts a full merge (a negative
// count), the next ones carry it on, as the FTS5 documentation says.
func (s *Store) compactIndexes(ctx context.Context) error {
	var tables []string
	err := s.readTx(ctx, func(r *rtx) error { return r.selectRows(&tables, ftsTablesSQL) })
	if err != nil {
		return err
	}
	for _, t := range tables {
		q := `INSERT INTO "` + strings.ReplaceAll(t, `"`, `""`) + `" ("` + strings.ReplaceAll(t, `"`, `""`) + `", rank) VALUES ('merge', ?)`
		for n := -compactStep; ; n = compactStep {
			var before, after int64
			err := s.write(ctx, func(tx *wtx) error {
				if err := tx.get(&before, "SELECT total_changes()"); err != nil {
					return err
				}
				if _, err := tx.exec(q, n); err != nil {
					return err
				}
				return tx.get(&after, "SELECT total_changes()")
			})
			if err != nil {
				return err
			}
			if after-before < 2 {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
