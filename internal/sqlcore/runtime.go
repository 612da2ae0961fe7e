package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Runtime = (*Runtime)(nil)

// Runtime is the runtime-bookkeeping facet of a Store (see store.Runtime).
// Obtain it with Store.Runtime.
type Runtime struct{ s *Store }

// Runtime returns the runtime-bookkeeping facet.
func (s *Store) Runtime() store.Runtime { return &Runtime{s: s} }

const rtColumns = `id, agent_alias, workspace_dir, chat_mode, owner_id, model, model_provider,
	temperature, created_at_ms, last_active_ms, turn_gen, turn_running, turn_owner,
	turn_started_ms, turn_lease_ms, turn_cancel, data_key`

// rtRow is a runtime_sessions row as stored.
type rtRow struct {
	ID            string          `db:"id"`
	AgentAlias    string          `db:"agent_alias"`
	WorkspaceDir  string          `db:"workspace_dir"`
	ChatMode      string          `db:"chat_mode"`
	OwnerID       sql.NullString  `db:"owner_id"`
	Model         sql.NullString  `db:"model"`
	Provider      sql.NullString  `db:"model_provider"`
	Temperature   sql.NullFloat64 `db:"temperature"`
	CreatedAtMS   int64           `db:"created_at_ms"`
	LastActiveMS  int64           `db:"last_active_ms"`
	TurnGen       int64           `db:"turn_gen"`
	TurnRunning   bool            `db:"turn_running"`
	TurnOwner     string          `db:"turn_owner"`
	TurnStartedMS int64           `db:"turn_started_ms"`
	TurnLeaseMS   int64           `db:"turn_lease_ms"`
	TurnCancel    string          `db:"turn_cancel"`
	DataKey       string          `db:"data_key"` // crypt_runtime.go
}

// session is the row as a RuntimeSession read at now (which decides
// whether a running turn is stale).
func (r *rtRow) session(now time.Time) store.RuntimeSession {
	s := store.RuntimeSession{
		ID:           r.ID,
		AgentAlias:   r.AgentAlias,
		WorkspaceDir: r.WorkspaceDir,
		ChatMode:     store.ChatMode(r.ChatMode),
		OwnerID:      r.OwnerID.String,
		Overrides:    r.overrides(),
		CreatedAt:    rowcodec.FromMillis(r.CreatedAtMS),
		LastActive:   rowcodec.FromMillis(r.LastActiveMS),
		Turn: store.TurnState{
			Generation:  uint64(r.TurnGen),
			Running:     r.TurnRunning,
			Owner:       r.TurnOwner,
			CancelCause: store.CancelCause(r.TurnCancel),
		},
	}
	if r.TurnGen > 0 {
		s.Turn.StartedAt = rowcodec.FromMillis(r.TurnStartedMS)
	}
	if r.TurnRunning {
		s.Turn.LeaseExpiresAt = rowcodec.FromMillis(r.TurnLeaseMS)
		s.Turn.Stale = r.TurnLeaseMS <= rowcodec.ToMillis(now)
	}
	return s
}

func (r *rtRow) overrides() store.Overrides {
	var o store.Overrides
	if r.Model.Valid {
		o.Model = &r.Model.String
	}
	if r.Provider.Valid {
		o.Provider = &r.Provider.String
	}
	if r.Temperature.Valid {
		o.Temperature = &r.Temperature.Float64
	}
	return o
}

func nullString(p *string) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *p, Valid: true}
}

func nullFloat(p *float64) sql.NullFloat64 {
	if p == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *p, Valid: true}
}

const (
	rtCountSQL = `SELECT sessions FROM runtime_counters WHERE id = 1`

	rtInsertSQL = `INSERT INTO runtime_sessions
		(id, agent_alias, workspace_dir, chat_mode, owner_id, created_at_ms, last_active_ms, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

	rtGetSQL = `SELECT ` + rtColumns + ` FROM runtime_sessions WHERE id = ? AND tenant = ?`

	rtSetOverridesSQL = `UPDATE runtime_sessions SET model = ?, model_provider = ?, temperature = ?
		WHERE id = ?`

	rtListIDsSQL = `SELECT id FROM runtime_sessions WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?`

	rtCountByAgentSQL = `SELECT agent_alias, count(*) AS n FROM runtime_sessions GROUP BY agent_alias`
	// rtTenantCountByAgentSQL and rtTenantCountSQL count one tenant's
	// sessions (runtime_counters counts the store's, of every tenant).
	rtTenantCountByAgentSQL = `SELECT agent_alias, count(*) AS n FROM runtime_sessions WHERE tenant = ? GROUP BY agent_alias`
	rtTenantCountSQL        = `SELECT count(*) FROM runtime_sessions WHERE tenant = ?`

	// rtEvictSQL removes the sessions that have no live turn: none
	// running, or a stale one (its lease lapsed before now).
	rtEvictSQL = `DELETE FROM runtime_sessions
		WHERE owner_id = ? AND chat_mode = ? AND (turn_running = false OR turn_lease_ms <= ?) AND id <> ? AND tenant = ?
		RETURNING id, agent_alias`

	rtDeleteSQL = `DELETE FROM runtime_sessions WHERE id = ? AND tenant = ?`

	// rtHistoryLenSQL finds the end of a history with one probe of the
	// (session_id, seq) index.
	rtHistoryLenSQL = `SELECT coalesce(max(seq) + 1, 0) FROM conversation_messages WHERE session_id = ?`
)

// Insert adds a runtime session under the global cap (see
// store.Runtime.Insert).
func (r *Runtime) Insert(ctx context.Context, req store.NewRuntimeSession) (store.RuntimeSession, error) {
	if err := req.Validate(); err != nil {
		return store.RuntimeSession{}, err
	}
	id := req.ID
	if id == "" {
		id = uuid.NewString()
	}
	owner := sql.NullString{String: req.OwnerID, Valid: req.OwnerID != ""}
	limit := r.s.cfg.MaxSessions
	dk, err := r.s.newDataKey(ctx) // crypt_runtime.go: nil unless the store encrypts
	if err != nil {
		return store.RuntimeSession{}, err
	}
	workspace := sealed(dk, []byte(req.WorkspaceDir), adWorkspace)
	var out store.RuntimeSession
	err = r.s.write(ctx, func(tx Tx) error {
		if limit > 0 {
			var n int64
			if err := tx.Get(&n, r.s.q.rtCountLock); err != nil {
				return err
			}
			if n >= limit {
				return &store.TooManySessionsError{Max: limit, Current: n}
			}
		}
		now := rowcodec.ToMillis(r.s.now())
		_, err := tx.Exec(rtInsertSQL, id, req.AgentAlias, workspace, string(req.ChatMode), owner, now, now, r.s.tenant)
		if r.s.isUnique(err) {
			return &store.ConflictError{Resource: "runtime_session", ID: id, Reason: "id exists"}
		}
		if err != nil {
			return err
		}
		if err := setRuntimeKey(tx, id, dk); err != nil {
			return err
		}
		out = store.RuntimeSession{
			ID: id, AgentAlias: req.AgentAlias, WorkspaceDir: req.WorkspaceDir,
			ChatMode: req.ChatMode, OwnerID: req.OwnerID,
			CreatedAt: rowcodec.FromMillis(now), LastActive: rowcodec.FromMillis(now),
		}
		return nil
	})
	if err != nil {
		r.s.discardKey(ctx, dk)
		return store.RuntimeSession{}, err
	}
	return out, nil
}

// Get returns one runtime session.
func (r *Runtime) Get(ctx context.Context, id string) (store.RuntimeSession, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.RuntimeSession{}, err
	}
	var row rtRow
	err := r.s.get(ctx, &row, rtGetSQL, id, r.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RuntimeSession{}, rtNotFound(id)
	}
	if err != nil {
		return store.RuntimeSession{}, err
	}
	if err := row.open(ctx, r.s); err != nil { // crypt_runtime.go
		return store.RuntimeSession{}, err
	}
	out := row.session(r.s.now())
	out.DataKeyID = row.DataKey
	return out, nil
}

func rtNotFound(id string) error {
	return &store.NotFoundError{Resource: "session", ID: id}
}

// Touch sets the session's last-active time to now.
func (r *Runtime) Touch(ctx context.Context, id string) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	return r.s.write(ctx, func(tx Tx) error {
		res, err := tx.Exec(r.s.q.rtTouch, rowcodec.ToMillis(r.s.now()), id, r.s.tenant)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return rtNotFound(id)
		}
		return nil
	})
}

// SetOverrides merges patch into the session's overrides.
func (r *Runtime) SetOverrides(ctx context.Context, id string, patch store.Overrides) (store.Overrides, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Overrides{}, err
	}
	if err := patch.Validate(); err != nil {
		return store.Overrides{}, err
	}
	var out store.Overrides
	err := r.s.write(ctx, func(tx Tx) error {
		var row rtRow
		err := tx.Get(&row, r.s.q.rtGetLock, id, r.s.tenant)
		if errors.Is(err, sql.ErrNoRows) {
			return rtNotFound(id)
		}
		if err != nil {
			return err
		}
		merged := row.overrides().Merge(patch)
		if _, err := tx.Exec(rtSetOverridesSQL, nullString(merged.Model), nullString(merged.Provider),
			nullFloat(merged.Temperature), id); err != nil {
			return err
		}
		out = merged
		return nil
	})
	if err != nil {
		return store.Overrides{}, err
	}
	return out, nil
}

// ListIDs returns a page of runtime session ids in id order.
func (r *Runtime) ListIDs(ctx context.Context, req store.ListIDsRequest) (store.Page[string], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[string]{}, err
	}
	var ids []string
	if err := r.s.selectRows(ctx, &ids, rtListIDsSQL, r.s.tenant, req.After, req.Limit+1); err != nil {
		return store.Page[string]{}, err
	}
	page := store.Page[string]{Items: ids}
	if len(ids) > req.Limit {
		page.Items = ids[:req.Limit]
		page.Next = page.Items[req.Limit-1]
	}
	if page.Items == nil {
		page.Items = []string{}
	}
	return page, nil
}

// Count returns the number of the tenant's runtime sessions (an index
// range of runtime_sessions_tenant; runtime_counters, which the cap
// Config.MaxSessions compares, counts those of every tenant).
func (r *Runtime) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := r.s.get(ctx, &n, rtTenantCountSQL, r.s.tenant); err != nil {
		return 0, err
	}
	return n, nil
}

// CountByAgent returns the number of runtime sessions per agent alias.
func (r *Runtime) CountByAgent(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Alias string `db:"agent_alias"`
		N     int64  `db:"n"`
	}
	if err := r.s.selectRows(ctx, &rows, rtTenantCountByAgentSQL, r.s.tenant); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, row := range rows {
		out[row.Alias] = row.N
	}
	return out, nil
}

// HistoryLen returns the end position of the session's message history.
func (r *Runtime) HistoryLen(ctx context.Context, id string) (int64, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, err
	}
	var n int64
	err := r.s.readTx(ctx, func(rx Tx) error {
		var one int
		if err := rx.Get(&one, rtExistsSQL, id, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return rtNotFound(id)
		} else if err != nil {
			return err
		}
		// The history is the tenant's conversation of the same id (none:
		// an empty history, also when another tenant holds that id). A
		// forked conversation's history goes on after its fork point
		// (conv_lineage.go).
		var l lineRow
		if err := rx.Get(&l, convLineSQL, id, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if err := rx.Get(&n, rtHistoryLenSQL, id); err != nil {
			return err
		}
		n = max(n, l.ForkNext, l.FirstSeq)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// HistorySlice returns up to limit messages of the session's history from
// position from on; past the end it returns none.
func (r *Runtime) HistorySlice(ctx context.Context, id string, from int64, limit int) ([]store.Message, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	if from < 0 {
		return nil, store.Invalid("from", "must not be negative")
	}
	n, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	var rows []msgRow
	err = r.s.readTx(ctx, func(rx Tx) error {
		var one int
		if err := rx.Get(&one, rtExistsSQL, id, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return rtNotFound(id)
		} else if err != nil {
			return err
		}
		var l lineRow
		if err := rx.Get(&l, convLineSQL, id, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return nil // no conversation: no history
		} else if err != nil {
			return err
		}
		var err error
		rows, err = (&Conversations{s: r.s}).readView(rx, l.view(id), from, math.MaxInt64, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return decodeMessages(id, rows)
}

// EvictSameModeSiblings removes the owner's idle sessions of the same mode,
// except req.ExceptID.
func (r *Runtime) EvictSameModeSiblings(ctx context.Context, req store.EvictRequest) ([]store.Evicted, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	var out []store.Evicted
	err := r.s.write(ctx, func(tx Tx) error {
		var rows []struct {
			ID    string `db:"id"`
			Alias string `db:"agent_alias"`
		}
		if err := tx.Select(&rows, rtEvictSQL, req.OwnerID, string(req.ChatMode), rowcodec.ToMillis(r.s.now()), req.ExceptID, r.s.tenant); err != nil {
			return err
		}
		out = make([]store.Evicted, len(rows))
		for i, row := range rows {
			out[i] = store.Evicted{ID: row.ID, AgentAlias: row.Alias}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.Evicted) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > 0 {
		r.s.log.Debug("evicted same-mode sibling sessions", "owner_id", req.OwnerID, "count", len(out))
		r.s.shredAfter(ctx) // crypt.go: the evicted sessions' data keys
	}
	return out, nil
}

// Remove deletes the session, its uploads and its conversation, cancelling
// a running turn with store.CauseSessionRemoved.
func (r *Runtime) Remove(ctx context.Context, id string) (bool, error) {
	return r.remove(ctx, id, store.CauseSessionRemoved)
}

// Kill deletes the session like Remove, cancelling a running turn with
// store.CauseAdminKill.
func (r *Runtime) Kill(ctx context.Context, id string) (bool, error) {
	return r.remove(ctx, id, store.CauseAdminKill)
}

func (r *Runtime) remove(ctx context.Context, id string, cause store.CancelCause) (bool, error) {
	if err := store.ValidateID("id", id); err != nil {
		return false, err
	}
	var (
		existed bool
		fire    turnKey
		fired   store.CancelCause
	)
	err := r.s.write(ctx, func(tx Tx) error {
		existed, fire, fired = false, turnKey{}, ""
		t, err := r.readTurn(tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if t.Running {
			fire = turnKey{id: id, gen: uint64(t.Gen)}
			fired, err = r.recordCancel(tx, id, t, cause)
			if err != nil {
				return err
			}
		}
		if _, err := tx.Exec(rtDeleteSQL, id, r.s.tenant); err != nil {
			return err
		}
		// The conversation of the same id goes in the same transaction
		// (its messages, artifacts, traces, runs and reports cascade).
		if _, err := (&Conversations{s: r.s}).deleteTx(tx, id); err != nil {
			return err
		}
		existed = true
		return nil
	})
	if err != nil {
		return false, err
	}
	if fired != "" {
		r.s.turns.fire(fire, cancelled(fire, fired))
	}
	if existed {
		r.s.log.Debug("removed runtime session", "session_id", id, "cause", string(cause))
		r.s.shredAfter(ctx) // crypt.go: the session's data key, and its conversation's unless forks read it
	}
	return existed, nil
}
