package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// nullPK is a lineage column's value: NULL for 0.
func nullPK(pk int64) any {
	if pk == 0 {
		return nil
	}
	return pk
}

// Fork creates a session holding key's history up to req.At (see
// store.AgentBranches.Fork). It writes one row and the fork's session
// state; the events stay where they are.
func (a *AgentSessions) Fork(ctx context.Context, req store.ForkRequest) (store.AgentSession, error) {
	if err := req.Validate(); err != nil {
		return store.AgentSession{}, err
	}
	key := store.SessionKey{App: req.Key.App, User: req.Key.User, Session: req.Session}
	if key.Session == "" {
		key.Session = uuid.NewString()
	}
	dk, err := a.s.newDataKey(ctx) // crypt.go: the fork's own data key
	if err != nil {
		return store.AgentSession{}, err
	}
	var out store.AgentSession
	err = a.s.write(ctx, func(tx Tx) error {
		src, err := lockLive(tx, a.s.tenant, req.Key)
		if err != nil {
			return err
		}
		if req.At > src.EventCount {
			return store.Invalid("at", "is past the session's last event")
		}
		// The app and user scopes (shared: the fork's are the same) and
		// the current session scope, in one statement.
		cur, err := a.s.readStateOpen(tx, req.Key, src.PK, src.DataKey)
		if err != nil {
			return err
		}
		st := cur.Session
		if req.At < src.EventCount {
			if st, err = a.s.stateAt(tx, src, req.At); err != nil {
				return err
			}
		}
		parent, err := owner(tx, src, req.At)
		if err != nil {
			return err
		}
		nowMS := rowcodec.ToMillis(a.s.now())
		var pk int64
		err = tx.Scan(lnInsertSQL, []any{key.App, key.User, key.Session, 1, req.At, nowMS, nowMS,
			parent.PK, req.At, rowLive, nil, sealInitial(dk, st), a.s.tenant, 0, minuteOf(nowMS)}, &pk)
		if a.s.isUnique(err) {
			return &store.ConflictError{Resource: "session", ID: key.Session, Reason: "session exists"}
		}
		if err != nil {
			return err
		}
		if err := setKeyOfPK(tx, pk, dk); err != nil {
			return err
		}
		if err := putState(tx, a.s.tenant, key, pk, sealDelta(dk, store.ScopedState{Session: st})); err != nil {
			return err
		}
		row := asRow{PK: pk, Version: 1, EventCount: req.At, CreatedAtMS: nowMS, UpdatedAtMS: nowMS}
		out = row.session(key)
		out.State = store.ScopedState{App: cur.App, User: cur.User, Session: st}
		return nil
	})
	if err != nil {
		a.s.discardKey(ctx, dk)
		return store.AgentSession{}, err
	}
	return out, nil
}

// Rewind supersedes the events after req.To and restores the session
// state at req.To (see store.AgentBranches.Rewind). The superseded events
// move to a new row (retired = superseded) that reads the history before
// them as the session did, so forks that read them are repointed to it
// and read exactly what they read before.
func (a *AgentSessions) Rewind(ctx context.Context, req store.RewindRequest) (store.AgentSession, error) {
	if err := req.Validate(); err != nil {
		return store.AgentSession{}, err
	}
	key := req.Key
	err := a.s.write(ctx, func(tx Tx) error {
		p, err := lockLive(tx, a.s.tenant, key)
		if err != nil {
			return err
		}
		if req.ExpectedVersion > 0 && p.Version != req.ExpectedVersion {
			return &store.StaleSessionError{Key: key, Expected: req.ExpectedVersion, Current: p.Version}
		}
		if req.To > p.EventCount {
			return store.Invalid("to", "is past the session's last event")
		}
		if req.To == p.EventCount {
			return nil // nothing follows it
		}
		st, err := a.s.stateAt(tx, p, req.To)
		if err != nil {
			return err
		}
		// The superseded run keeps the session's data key: its events
		// move to it as they are (crypt.go).
		dk, err := a.s.dataKey(ctx, p.DataKey)
		if err != nil {
			return err
		}
		nowMS := rowcodec.ToMillis(a.s.now())
		// The holder reads the history before the superseded events as
		// the session did; the session now reads it up to req.To.
		hParent, hFork, hInit := p.PK, req.To, sealInitial(dk, st)
		pFork, pInit := p.ForkSeq, p.InitialState
		if req.To < p.ForkSeq { // the session holds no event at or before To
			hParent, hFork, hInit = p.Parent, p.ForkSeq, p.InitialState
			pFork, pInit = req.To, sealInitial(dk, st)
		}
		var h int64
		err = tx.Scan(lnInsertSQL, []any{key.App, key.User, key.Session, p.Version, p.EventCount, nowMS, nowMS,
			nullPK(hParent), hFork, rowSuperseded, p.PK, hInit, a.s.tenant, req.To, minuteOf(nowMS)}, &h)
		if err != nil {
			return err
		}
		if err := setKeyOfPK(tx, h, dk); err != nil {
			return err
		}
		if _, err := tx.Exec(lnMoveEventsSQL, h, p.PK, req.To); err != nil {
			return err
		}
		if _, err := tx.Exec(lnMoveLogSQL, h, p.PK, req.To); err != nil {
			return err
		}
		if _, err := tx.Exec(lnRepointSQL, h, p.PK, req.To, h); err != nil {
			return err
		}
		// Positions after To will name other events: a new feed epoch.
		if _, err := tx.Exec(lnRewoundSQL, req.To, nowMS, newEpoch(), pFork, nullPK(p.Parent), pInit, p.PK); err != nil {
			return err
		}
		if _, err := tx.Exec(lnClearStateSQL, p.PK); err != nil {
			return err
		}
		return putState(tx, a.s.tenant, key, p.PK, sealDelta(dk, store.ScopedState{Session: st}))
	})
	if err != nil {
		return store.AgentSession{}, err
	}
	return a.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
}

// Compact appends a compaction record (see store.AgentBranches.Compact).
func (a *AgentSessions) Compact(ctx context.Context, req store.CompactRequest) (store.AppendEventResult, error) {
	if err := req.Validate(); err != nil {
		return store.AppendEventResult{}, err
	}
	rng := req.Range
	return a.appendEvent(ctx, store.AppendEventRequest{Key: req.Key, Event: req.Summary, Delta: req.Delta}, &rng)
}

// DeleteSession deletes a session (see store.AgentSessions.DeleteSession).
// A row that forks still read from stays, retired; the runs of events its
// rewinds superseded go with it unless forks read them. Every row left
// without a reader is removed, up the lineage.
func (a *AgentSessions) DeleteSession(ctx context.Context, key store.SessionKey) error {
	if err := key.Validate(); err != nil {
		return err
	}
	err := a.s.write(ctx, func(tx Tx) error {
		p, err := lockLive(tx, a.s.tenant, key)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(lnRetireSQL, p.PK); err != nil {
			return err
		}
		return dropRetired(tx, p.PK)
	})
	if err != nil {
		return err
	}
	a.s.shredAfter(ctx) // crypt.go: the data keys of the rows it removed
	return nil
}

// dropRetired finishes the deletion of the session row pk, already
// retired in tx: its state goes, and so does every row of its lineage
// that nothing reads any more (the row itself included unless forks read
// from it). DeleteSession and retention sweeps share it, so a sweep never
// takes the history a fork still reads.
func dropRetired(tx Tx, pk int64) error {
	if _, err := tx.Exec(lnClearStateSQL, pk); err != nil {
		return err
	}
	cands := []int64{pk}
	err := tx.Query(lnHoldersSQL, []any{pk}, func(rows Rows) error {
		var h int64
		if err := rows.Scan(&h); err != nil {
			return err
		}
		cands = append(cands, h)
		return nil
	})
	if err != nil {
		return err
	}
	return prune(tx, cands)
}

// prune removes the retired rows among cands that nothing reads any more,
// and then their ancestors that this leaves unread.
func prune(tx Tx, cands []int64) error {
	for steps := 0; len(cands) > 0; steps++ {
		if steps > maxLineageDepth {
			return errors.New("sqlcore: agent session lineage too deep to prune")
		}
		c := cands[len(cands)-1]
		cands = cands[:len(cands)-1]
		n, err := readNode(tx, c)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if n.Retired == rowLive {
			continue
		}
		if n.Retired == rowSuperseded {
			o, err := readNode(tx, n.SupersededOf)
			if err == nil && o.Retired == rowLive {
				continue // its session still offers it as superseded
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		var children int64
		if err := tx.Scan(lnHasChildSQL, []any{c}, &children); err != nil {
			return err
		}
		if children > 0 {
			continue
		}
		if _, err := tx.Exec(lnDropSQL, c); err != nil {
			return err
		}
		if n.Parent != 0 {
			cands = append(cands, n.Parent)
		}
	}
	return nil
}

// Superseded returns the runs of events rewinds of key superseded (see
// store.AgentBranches.Superseded).
func (a *AgentSessions) Superseded(ctx context.Context, key store.SessionKey) ([]store.SupersededRun, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	var out []store.SupersededRun
	err := a.s.readTx(ctx, func(r Tx) error {
		out = nil
		p, err := liveNode(r, a.s.tenant, key)
		if err != nil {
			return err
		}
		type run struct{ pk, from int64 }
		var runs []run
		err = r.Query(lnRunsSQL, []any{p.PK}, func(rows Rows) error {
			var h run
			if err := rows.Scan(&h.pk, &h.from); err != nil {
				return err
			}
			runs = append(runs, h)
			return nil
		})
		if err != nil {
			return err
		}
		for _, h := range runs {
			n, err := readNode(r, h.pk)
			if err != nil {
				return err
			}
			// The run is the holder's view after the rewind point: its
			// own events, and, when a fork was rewound below its fork
			// point, the inherited ones after that point too.
			segs, err := a.lineage(r, asRow{PK: n.PK, Parent: n.Parent, ForkSeq: n.ForkSeq, DataKey: n.DataKey})
			if err != nil {
				return err
			}
			evs, err := a.readAscending(r, segs, h.from, math.MaxInt, "", false, []store.AgentEvent{})
			if err != nil {
				return err
			}
			out = append(out, store.SupersededRun{RewoundAt: rowcodec.FromMillis(n.CreatedAtMS), Events: evs})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []store.SupersededRun{}
	}
	return out, nil
}

// History returns the tree key belongs to (see
// store.AgentBranches.History).
func (a *AgentSessions) History(ctx context.Context, key store.SessionKey) ([]store.LineageNode, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	var out []store.LineageNode
	err := a.s.readTx(ctx, func(r Tx) error {
		out = nil
		cur, err := liveNode(r, a.s.tenant, key)
		if err != nil {
			return err
		}
		root := cur
		for depth := 0; root.Parent != 0; depth++ {
			if depth > maxLineageDepth {
				return errors.New("sqlcore: agent session lineage too deep")
			}
			if root, err = readNode(r, root.Parent); err != nil {
				return err
			}
		}
		stack := []int64{root.PK}
		for len(stack) > 0 {
			if len(out) > maxLineageDepth {
				return errors.New("sqlcore: agent session tree too large")
			}
			pk := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n, err := readNode(r, pk)
			if err != nil {
				return err
			}
			node := store.LineageNode{ID: n.PK, Parent: n.Parent, ForkSeq: n.ForkSeq, Key: n.Key,
				Status: store.NodeLive, SupersededOf: n.SupersededOf, EventCount: n.EventCount,
				CreatedAt: rowcodec.FromMillis(n.CreatedAtMS), Current: n.PK == cur.PK}
			switch n.Retired {
			case rowDeleted:
				node.Status = store.NodeDeleted
			case rowSuperseded:
				node.Status = store.NodeSuperseded
			}
			err = r.Query(lnCompactionsSQL, []any{pk}, func(rows Rows) error {
				var seq int64
				var rng store.CompactionRange
				if err := rows.Scan(&seq, &rng.From, &rng.To); err != nil {
					return err
				}
				if node.Compactions == nil {
					node.Compactions = map[int64]store.CompactionRange{}
				}
				node.Compactions[seq] = rng
				return nil
			})
			if err != nil {
				return err
			}
			out = append(out, node)
			var children []int64
			err = r.Query(lnChildrenSQL, []any{pk}, func(rows Rows) error {
				var c int64
				if err := rows.Scan(&c); err != nil {
					return err
				}
				children = append(children, c)
				return nil
			})
			if err != nil {
				return err
			}
			for i := len(children) - 1; i >= 0; i-- { // oldest child first
				stack = append(stack, children[i])
			}
		}
		return nil
	})
	return out, err
}
