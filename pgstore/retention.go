package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// WithSweeper runs a background sweeper (store.Retention.Sweep every
// cfg.Interval) while the store is open. Sweepers of every process on the
// schema share one lease: one of them sweeps at a time, and another takes
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

// spaceSQL measures the tables of the store's schema (with their indexes
// and TOAST): their size, the rows they hold by the statistics, and the
// share of dead rows a VACUUM would reclaim. Statistics lag behind
// commits, so Free and Rows are estimates.
const spaceSQL = `SELECT coalesce(sum(pg_total_relation_size(st.relid)), 0)::bigint,
	coalesce(sum(pg_relation_size(st.relid) * st.n_dead_tup / greatest(st.n_live_tup + st.n_dead_tup, 1)), 0)::bigint,
	coalesce(sum(st.n_live_tup), 0)::bigint
	FROM pg_catalog.pg_stat_user_tables AS st WHERE st.schemaname = current_schema()`

// space measures the store's schema. The relations do not shrink when
// rows are deleted (VACUUM makes their space reusable, VACUUM FULL gives
// it back), so a sweep's size budget estimates what each removed row
// frees from the average row (Rows is at least 1, so that it never takes
// the unchanged size for data still to remove).
func (s *Store) space(ctx context.Context) (sqlcore.SpaceInfo, error) {
	if s.closed.Load() {
		return sqlcore.SpaceInfo{}, store.ErrStoreClosed
	}
	var info sqlcore.SpaceInfo
	if err := s.pool.QueryRow(ctx, spaceSQL).Scan(&info.Used, &info.Free, &info.Rows); err != nil {
		return info, mapErr(err)
	}
	info.Rows = max(info.Rows, 1)
	return info, nil
}
