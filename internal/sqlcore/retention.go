package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// SpaceInfo is what a backend knows of the space its database takes.
type SpaceInfo struct {
	// Used is the bytes the store's data takes (SQLite: pages in use;
	// PostgreSQL: the store's relations, dead rows included).
	Used int64
	// Free is the space free inside the database: SQLite's free pages;
	// PostgreSQL: an estimate of what VACUUM would reclaim.
	Free int64
	// Rows estimates the rows of the store's tables (PostgreSQL only, to
	// estimate the bytes a deleted row frees; 0 where Used is exact).
	Rows int64
}

// Retention implements store.Retention over the Store's DB.
type Retention struct{ s *Store }

var _ store.Retention = (*Retention)(nil)

// Retention returns the lifecycle facet. On a tenant's Store (WithTenant)
// holds and Accessed are the tenant's, Policies reads the store's
// policies, and what belongs to the operator (setting policies, sweeps,
// their log and lease) fails with ErrInvalidInput (store.TenantStore).
func (s *Store) Retention() *Retention { return &Retention{s: s} }

// operatorOnly refuses, on a tenant's Store, what only the store's
// operator does: policies, sweeps and their lease and log apply to (and
// count) every tenant's rows.
func (r *Retention) operatorOnly(what string) error {
	if r.s.tenant == "" {
		return nil
	}
	return store.Invalid("tenant", what+" on the whole store, not through a tenant handle")
}

const (
	policyColumns   = `kind, max_age_ms, keep_last, max_bytes, reads_count, updated_at_ms`
	policySelectSQL = `SELECT ` + policyColumns + ` FROM retention_policies ORDER BY kind`
	policyUpsertSQL = `INSERT INTO retention_policies (` + policyColumns + `) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind) DO UPDATE SET max_age_ms = excluded.max_age_ms, keep_last = excluded.keep_last,
		max_bytes = excluded.max_bytes, reads_count = excluded.reads_count, updated_at_ms = excluded.updated_at_ms`
	policyDeleteSQL = `DELETE FROM retention_policies WHERE kind = ?`

	// Holds are the store's tenant's (migration 23: the tenant ends the
	// key).
	holdUpsertSQL = `INSERT INTO retention_holds (facet, app, user_id, id, reason, created_at_ms, tenant) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (facet, app, user_id, id, tenant) DO UPDATE SET reason = excluded.reason`
	holdDeleteSQL = `DELETE FROM retention_holds WHERE facet = ? AND app = ? AND user_id = ? AND id = ? AND tenant = ?`
	holdSelectSQL = `SELECT facet, app, user_id, id, reason, created_at_ms FROM retention_holds WHERE tenant = ?
		ORDER BY facet, app, user_id, id`

	leaseTakeSQL = `INSERT INTO sweep_lease (name, holder, expires_at_ms) VALUES ('sweep', ?1, ?2)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
		WHERE sweep_lease.holder = excluded.holder OR sweep_lease.expires_at_ms <= ?3
		RETURNING holder`
	leaseGetSQL  = `SELECT holder, expires_at_ms FROM sweep_lease WHERE name = 'sweep'`
	leaseDropSQL = `DELETE FROM sweep_lease WHERE name = 'sweep' AND holder = ?`

	sweepLogInsertSQL = `INSERT INTO sweep_log (holder, started_at_ms, finished_at_ms, report, error) VALUES (?, ?, ?, ?, ?)`
	sweepLogSelectSQL = `SELECT id, holder, report, error FROM sweep_log
		WHERE id > (SELECT max(id) FROM sweep_log) - ?1 ORDER BY id DESC LIMIT ?1`
	// sweepLogTrimSQL keeps the newest sweepLogKeep entries of the log.
	sweepLogTrimSQL = `DELETE FROM sweep_log WHERE id <= (SELECT max(id) FROM sweep_log) - ?`

	convAccessedSQL  = `UPDATE conversations SET last_access_ms = %s(last_access_ms, CAST(? AS BIGINT)) WHERE id = ? AND tenant = ?`
	agentAccessedSQL = `UPDATE agent_sessions SET last_access_ms = %s(last_access_ms, CAST(? AS BIGINT))
		WHERE tenant = ? AND app = ? AND user_id = ? AND session_id = ? AND retired = 0`
)

// sweepLogKeep is how many sweeps the log keeps.
const sweepLogKeep = 1000

// policyRow is a row of retention_policies.
type policyRow struct {
	Kind       string `db:"kind"`
	MaxAgeMS   int64  `db:"max_age_ms"`
	KeepLast   int64  `db:"keep_last"`
	MaxBytes   int64  `db:"max_bytes"`
	ReadsCount bool   `db:"reads_count"`
	UpdatedMS  int64  `db:"updated_at_ms"`
}

func (r policyRow) policy() store.Policy {
	return store.Policy{Kind: store.PolicyKind(r.Kind), MaxAge: time.Duration(r.MaxAgeMS) * time.Millisecond,
		KeepLast: r.KeepLast, MaxBytes: r.MaxBytes, ReadsCount: r.ReadsCount, UpdatedAt: rowcodec.FromMillis(r.UpdatedMS)}
}

// SetPolicy stores p (see store.Retention.SetPolicy).
func (r *Retention) SetPolicy(ctx context.Context, p store.Policy) error {
	if err := r.operatorOnly("policies are set"); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	defer r.s.reads.invalidate()
	return r.s.write(ctx, func(tx Tx) error {
		_, err := tx.Exec(policyUpsertSQL, string(p.Kind), p.MaxAge.Milliseconds(), p.KeepLast, p.MaxBytes,
			p.ReadsCount, rowcodec.ToMillis(r.s.now()))
		return err
	})
}

// RemovePolicy removes the policy of kind (see store.Retention).
func (r *Retention) RemovePolicy(ctx context.Context, kind store.PolicyKind) (bool, error) {
	if err := r.operatorOnly("policies are removed"); err != nil {
		return false, err
	}
	if _, ok := store.KindInfo(kind); !ok {
		return false, store.Invalid("kind", "unknown policy kind")
	}
	defer r.s.reads.invalidate()
	var n int64
	err := r.s.write(ctx, func(tx Tx) error {
		res, err := tx.Exec(policyDeleteSQL, string(kind))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// Policies returns the stored policies in store.PolicyKinds order.
func (r *Retention) Policies(ctx context.Context) ([]store.Policy, error) {
	var rows []policyRow
	if err := r.s.selectRows(ctx, &rows, policySelectSQL); err != nil {
		return nil, err
	}
	return orderPolicies(rows), nil
}

// orderPolicies puts the known policies of rows in store.PolicyKinds
// order (a kind this binary does not know is left out).
func orderPolicies(rows []policyRow) []store.Policy {
	out := []store.Policy{}
	for _, k := range store.PolicyKinds() {
		for _, row := range rows {
			if store.PolicyKind(row.Kind) == k.Kind {
				out = append(out, row.policy())
			}
		}
	}
	return out
}

// Hold places a hold on ref (see store.Retention.Hold).
func (r *Retention) Hold(ctx context.Context, ref store.SessionRef, reason string) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if len(reason) > 1024 {
		return store.Invalid("reason", "longer than 1024 bytes")
	}
	return r.s.write(ctx, func(tx Tx) error {
		_, err := tx.Exec(holdUpsertSQL, ref.Facet, ref.App, ref.UserID, ref.ID, reason, rowcodec.ToMillis(r.s.now()), r.s.tenant)
		return err
	})
}

// Release removes the hold on ref (see store.Retention.Release).
func (r *Retention) Release(ctx context.Context, ref store.SessionRef) (bool, error) {
	if err := ref.Validate(); err != nil {
		return false, err
	}
	var n int64
	err := r.s.write(ctx, func(tx Tx) error {
		res, err := tx.Exec(holdDeleteSQL, ref.Facet, ref.App, ref.UserID, ref.ID, r.s.tenant)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// holdRow is a row of retention_holds.
type holdRow struct {
	Facet     string `db:"facet"`
	App       string `db:"app"`
	UserID    string `db:"user_id"`
	ID        string `db:"id"`
	Reason    string `db:"reason"`
	CreatedMS int64  `db:"created_at_ms"`
}

// Holds returns every hold (see store.Retention.Holds).
func (r *Retention) Holds(ctx context.Context) ([]store.Hold, error) {
	var rows []holdRow
	if err := r.s.selectRows(ctx, &rows, holdSelectSQL, r.s.tenant); err != nil {
		return nil, err
	}
	out := make([]store.Hold, 0, len(rows))
	for _, h := range rows {
		out = append(out, store.Hold{SessionRef: store.SessionRef{Facet: h.Facet, App: h.App, UserID: h.UserID, ID: h.ID},
			Reason: h.Reason, CreatedAt: rowcodec.FromMillis(h.CreatedMS)})
	}
	return out, nil
}

// Accessed records a read of a conversation or an agent session (see
// store.Retention.Accessed).
func (r *Retention) Accessed(ctx context.Context, ref store.SessionRef) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	var query string
	var args []any
	now := rowcodec.ToMillis(r.s.now())
	switch ref.Facet {
	case store.HoldConversations:
		query, args = fmt.Sprintf(convAccessedSQL, r.s.d.Greatest), []any{now, ref.ID, r.s.tenant}
	case store.HoldAgentSessions:
		query, args = fmt.Sprintf(agentAccessedSQL, r.s.d.Greatest), []any{now, r.s.tenant, ref.App, ref.UserID, ref.ID}
	default:
		return store.Invalid("facet", "only conversations and agent sessions record reads")
	}
	return r.s.write(ctx, func(tx Tx) error {
		res, err := tx.Exec(query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return &store.NotFoundError{Resource: "session", ID: ref.ID}
		}
		return nil
	})
}

// TakeLease takes or renews the sweep lease (see store.Retention).
func (r *Retention) TakeLease(ctx context.Context, holder string, ttl time.Duration) error {
	if err := r.operatorOnly("the sweep lease is taken"); err != nil {
		return err
	}
	if err := store.ValidateName("holder", holder); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return store.Invalid("ttl", "must be at least 1ms")
	}
	return r.s.write(ctx, func(tx Tx) error {
		now := rowcodec.ToMillis(r.s.now())
		var got string
		err := tx.Get(&got, leaseTakeSQL, holder, now+ttl.Milliseconds(), now)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var cur struct {
			Holder    string `db:"holder"`
			ExpiresMS int64  `db:"expires_at_ms"`
		}
		if err := tx.Get(&cur, leaseGetSQL); err != nil {
			return err
		}
		return &store.LeaseHeldError{Holder: cur.Holder, Expires: rowcodec.FromMillis(cur.ExpiresMS)}
	})
}

// DropLease gives the lease up if holder holds it.
func (r *Retention) DropLease(ctx context.Context, holder string) error {
	if err := r.operatorOnly("the sweep lease is dropped"); err != nil {
		return err
	}
	return r.s.write(ctx, func(tx Tx) error {
		_, err := tx.Exec(leaseDropSQL, holder)
		return err
	})
}

// logSweep appends a sweep to the log and trims the log.
func (r *Retention) logSweep(ctx context.Context, holder string, rep store.SweepReport, sweepErr error) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	msg := ""
	if sweepErr != nil {
		msg = sweepErr.Error()
	}
	return r.s.write(ctx, func(tx Tx) error {
		if _, err := tx.Exec(sweepLogInsertSQL, holder, rowcodec.ToMillis(rep.StartedAt), rowcodec.ToMillis(rep.FinishedAt), string(b), msg); err != nil {
			return err
		}
		_, err := tx.Exec(sweepLogTrimSQL, int64(sweepLogKeep))
		return err
	})
}

// Sweeps returns the newest sweeps of the log (see store.Retention).
func (r *Retention) Sweeps(ctx context.Context, limit int) ([]store.SweepRecord, error) {
	if err := r.operatorOnly("the log of sweeps is read"); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, store.Invalid("limit", "must not be negative")
	}
	if limit == 0 || limit > sweepLogKeep {
		limit = sweepLogKeep
	}
	var rows []struct {
		ID     int64  `db:"id"`
		Holder string `db:"holder"`
		Report string `db:"report"`
		Error  string `db:"error"`
	}
	if err := r.s.selectRows(ctx, &rows, sweepLogSelectSQL, int64(limit)); err != nil {
		return nil, err
	}
	out := make([]store.SweepRecord, 0, len(rows))
	for _, row := range rows {
		rec := store.SweepRecord{ID: row.ID, Holder: row.Holder, Error: row.Error}
		if err := json.Unmarshal([]byte(row.Report), &rec.Report); err != nil {
			return nil, fmt.Errorf("%w: sweep %d of the log does not decode: %v", store.ErrCorrupt, row.ID, err)
		}
		out = append(out, rec)
	}
	return out, nil
}
