package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// sweepNotes says why a facet of the registry has no policy kind. Every
// facet has kinds (store.PolicyKinds) or a note here: a facet with
// neither fails TestEveryFacetHasRetention, and Sweep refuses to run.
//
// It is empty while every registered facet has a kind, and stays as the
// one place a new facet that keeps its records for good (or that another
// facet's sweep already covers) says so: its note is shown in the sweep
// report (store.FacetSweep.Note), so that a facet without retention is a
// decision on record rather than an omission.
var sweepNotes = map[facet.Name]string{}

// MissingRetentionError reports a facet of the registry with no policy
// kind and no note: a programming error that a test catches.
type MissingRetentionError struct {
	Facet facet.Name
}

func (e *MissingRetentionError) Error() string {
	return fmt.Sprintf("sqlcore: facet %s has no retention policy kind", e.Facet)
}

// sweepPlan pairs every facet of the registry with its kinds.
type sweepPlan struct {
	facet facet.Facet
	kinds []*sweepKind
	note  string
}

// planSweep returns the facets in registry order with their kinds, or an
// error naming the first facet without any (and without a note).
func planSweep() ([]sweepPlan, error) {
	var out []sweepPlan
	for _, f := range facet.All() {
		p := sweepPlan{facet: f, note: sweepNotes[f.Name]}
		for _, k := range store.PolicyKinds() {
			if k.Facet != string(f.Name) {
				continue
			}
			for _, sk := range sweepKinds {
				if sk.kind == k.Kind {
					p.kinds = append(p.kinds, sk)
				}
			}
		}
		if len(p.kinds) == 0 && p.note == "" {
			return nil, &MissingRetentionError{Facet: f.Name}
		}
		out = append(out, p)
	}
	return out, nil
}

// sweepPage is how many units one walk statement returns.
const sweepPage = 64

// sweeper is one run of Sweep.
type sweeper struct {
	r       *Retention
	opts    store.SweepOptions
	nowMS   int64
	nowUS   int64 // the same instant in microseconds (audit times)
	rep     *store.SweepReport
	maxRows int64
	// idle is conversations_idle's due when it is set: a dry run leaves
	// the conversations it would remove out of messages_keep_last, as a
	// sweep (which removes them first) does.
	idle *due
	// tick, when set, reports the rows a removal in several transactions
	// took so far (sweep_staged.go), on top of the policy's counts.
	tick func(rows int64)
}

// Sweep applies the policies (see store.Retention.Sweep).
func (r *Retention) Sweep(ctx context.Context, opts store.SweepOptions) (store.SweepReport, error) {
	if err := r.operatorOnly("sweeps run"); err != nil {
		return store.SweepReport{}, err
	}
	if opts.BatchRows < 0 {
		return store.SweepReport{}, store.Invalid("batch_rows", "must not be negative")
	}
	if opts.Pause < 0 {
		return store.SweepReport{}, store.Invalid("pause", "must not be negative")
	}
	if opts.Holder == "" {
		opts.Holder = "sweep"
	} else if err := store.ValidateName("holder", opts.Holder); err != nil {
		return store.SweepReport{}, err
	}
	plan, err := planSweep()
	if err != nil {
		return store.SweepReport{}, err
	}
	policies := opts.Policies
	if policies == nil {
		if policies, err = r.Policies(ctx); err != nil {
			return store.SweepReport{}, err
		}
	} else {
		seen := map[store.PolicyKind]bool{}
		for _, p := range policies {
			if err := p.Validate(); err != nil {
				return store.SweepReport{}, err
			}
			if seen[p.Kind] {
				return store.SweepReport{}, store.Invalid("policies", "a kind is given twice")
			}
			seen[p.Kind] = true
		}
	}
	byKind := map[store.PolicyKind]store.Policy{}
	for _, p := range policies {
		byKind[p.Kind] = p
	}
	now := r.s.now()
	rep := store.SweepReport{DryRun: opts.DryRun, StartedAt: now}
	sw := &sweeper{r: r, opts: opts, nowMS: rowcodec.ToMillis(now), nowUS: rowcodec.ToMicros(now), rep: &rep, maxRows: int64(opts.BatchRows)}
	if sw.maxRows == 0 {
		sw.maxRows = store.DefaultSweepBatchRows
	}
	err = sw.run(ctx, plan, byKind)
	rep.FinishedAt = r.s.now()
	if !opts.DryRun {
		if lerr := r.logSweep(context.WithoutCancel(ctx), opts.Holder, rep, err); err == nil {
			err = lerr
		}
		_, rows := rep.Total()
		if rows > 0 {
			r.s.log.Info("sweep removed records", "rows", rows, "batches", rep.Batches, "bytes_freed", rep.BytesFreed)
			r.s.shredAfter(ctx) // crypt.go: the data keys of the sessions it removed
		}
	}
	return rep, err
}

// run applies each facet's policies, then the size budget, and gives
// the space back.
func (sw *sweeper) run(ctx context.Context, plan []sweepPlan, byKind map[store.PolicyKind]store.Policy) error {
	space := sw.r.s.cfg.Space
	if space != nil {
		info, err := space(ctx)
		if err != nil {
			return err
		}
		sw.rep.SizeBefore, sw.rep.SizeAfter, sw.rep.Reclaimable = info.Used, info.Used, info.Free
	}
	if !sw.opts.DryRun {
		// Removals an interrupted sweep left half done (sweep_staged.go).
		if err := sw.finishPending(ctx); err != nil {
			return err
		}
	}
	if _, ok := byKind[store.PolicyGovernedEnded]; ok && !sw.opts.DryRun {
		// Lapsed reservations released first, so that their sessions
		// can go (and the agents' reserved amounts stay right).
		if _, err := sw.r.s.Spend().ReleaseExpired(ctx); err != nil {
			return err
		}
	}
	if p, ok := byKind[store.PolicyConversationsIdle]; ok {
		d := sw.dueOf(p)
		sw.idle = &d
	}
	for _, fp := range plan {
		fs := store.FacetSweep{Facet: string(fp.facet.Name), Kinds: []store.KindSweep{}, Note: fp.note}
		sw.rep.Facets = append(sw.rep.Facets, fs)
		at := len(sw.rep.Facets) - 1
		for _, sk := range fp.kinds {
			p, ok := byKind[sk.kind]
			if !ok {
				continue
			}
			ks := store.KindSweep{Kind: sk.kind}
			err := sw.applyKind(ctx, sk, sw.dueOf(p), &ks)
			sw.rep.Facets[at].Kinds = append(sw.rep.Facets[at].Kinds, ks)
			if err != nil {
				return fmt.Errorf("%s: %w", sk.kind, err)
			}
		}
	}
	if p, ok := byKind[store.PolicySizeBudget]; ok {
		ks := store.KindSweep{Kind: store.PolicySizeBudget}
		err := sw.budget(ctx, p, &ks)
		sw.rep.Budget = &ks
		if err != nil {
			return fmt.Errorf("%s: %w", store.PolicySizeBudget, err)
		}
	}
	if sw.opts.DryRun {
		return nil
	}
	if rc := sw.r.s.cfg.Reclaim; rc != nil {
		freed, err := rc(ctx)
		if err != nil {
			return err
		}
		sw.rep.BytesFreed = freed
	}
	if space != nil {
		info, err := space(ctx)
		if err != nil {
			return err
		}
		sw.rep.SizeAfter, sw.rep.Reclaimable = info.Used, info.Free
	}
	return nil
}

// dueOf turns a policy into statement arguments as of the sweep's start.
func (sw *sweeper) dueOf(p store.Policy) due {
	d := due{cutoff: sw.nowMS - p.MaxAge.Milliseconds(), readsCap: math.MaxInt64, keepLast: p.KeepLast}
	if p.ReadsCount {
		d.readsCap = d.cutoff
	}
	return d
}

// applyKind runs every walk of sk, and counts the held units.
func (sw *sweeper) applyKind(ctx context.Context, sk *sweepKind, d due, ks *store.KindSweep) error {
	sw.progress(*ks)
	if sk.kind == store.PolicyAuditCheckpointed {
		return sw.pruneAudit(ctx, d, ks)
	}
	for _, src := range sk.sources {
		if err := sw.walk(ctx, sk, src, d, ks); err != nil {
			return err
		}
	}
	if sk.heldSQL != "" {
		if err := sw.r.s.get(ctx, &ks.Held, sk.heldSQL, sk.heldArgs(d)...); err != nil {
			return err
		}
	}
	return nil
}

// walk removes (or, in a dry run, counts) the units of one walk, a batch
// per transaction.
func (sw *sweeper) walk(ctx context.Context, sk *sweepKind, src source, d due, ks *store.KindSweep) error {
	cursor := startCursor
	sw.tick = func(rows int64) {
		partial := *ks
		partial.Rows += rows
		sw.progress(partial)
	}
	defer func() { sw.tick = nil }()
	for {
		got, next, more, err := sw.step(ctx, sk, src, d, cursor, math.MaxInt64)
		ks.Sessions += got.Sessions
		ks.Rows += got.Rows
		sw.progress(*ks)
		if err != nil || !more {
			return err
		}
		cursor = next
		if err := sw.pause(ctx); err != nil {
			return err
		}
	}
}

// progress reports a policy's counts so far (SweepOptions.Progress).
func (sw *sweeper) progress(ks store.KindSweep) {
	if sw.opts.Progress != nil {
		sw.opts.Progress(ks)
	}
}

// pause waits SweepOptions.Pause between two batches of a real sweep.
func (sw *sweeper) pause(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if sw.opts.Pause <= 0 || sw.opts.DryRun {
		return nil
	}
	t := time.NewTimer(sw.opts.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// step runs one batch of a walk in one transaction (a read transaction in
// a dry run): the units after cursor, whole, at most BatchRows rows (at
// least one unit), none whose time is after until. It returns what it
// removed, the cursor after the last unit it handled, and whether the
// walk has more.
func (sw *sweeper) step(ctx context.Context, sk *sweepKind, src source, d due, cursor unit, until int64) (store.KindSweep, unit, bool, error) {
	var got store.KindSweep
	var next unit
	var more bool
	// A session hidden to be removed in several transactions: a
	// conversation's id or an agent session's row.
	var hidden string
	var hiddenPK, hiddenRows int64
	batch := func(tx Tx) error {
		got, next, more, hidden, hiddenPK = store.KindSweep{}, cursor, false, "", 0
		var units []unit
		err := tx.Query(src.nextSQL, src.args(d, cursor, sweepPage), func(r Rows) error {
			u, err := src.scan(r)
			units = append(units, u)
			return err
		})
		if err != nil {
			return err
		}
		var rows int64
		for i, u := range units {
			if u.at > until || (i > 0 && rows+u.weight > sw.maxRows) {
				more = true
				return nil
			}
			if sw.staged(sk, u) {
				// Alone in its batch: hidden now, removed by the
				// transactions that follow (sweep_staged.go).
				mark := sw.markRemoval
				if sk.kind == agentSessionsIdle.kind {
					mark = sw.markAgentRemoval
				}
				n, ok, err := mark(tx, d, u)
				if err != nil {
					return err
				}
				if ok {
					hidden, hiddenPK, hiddenRows = u.id, u.pk, n
				}
				next, more = u, true
				return nil
			}
			n, removed, err := sw.apply(tx, sk, d, u)
			if err != nil {
				return err
			}
			if removed {
				got.Sessions++
				got.Rows += n
			}
			rows += max(n, u.weight)
			next = u
		}
		more = len(units) == sweepPage
		return nil
	}
	var err error
	if sw.opts.DryRun {
		err = sw.r.s.readTx(ctx, batch)
	} else {
		err = sw.r.s.write(ctx, batch)
		sw.rep.Batches++
	}
	if err != nil {
		return store.KindSweep{}, cursor, false, err
	}
	if hidden != "" || hiddenPK != 0 {
		finish := func() error { return sw.finishRemoval(ctx, hidden) }
		if sk.kind == agentSessionsIdle.kind {
			finish = func() error { return sw.finishAgentRemoval(ctx, hiddenPK) }
		}
		if err := finish(); err != nil {
			return store.KindSweep{}, cursor, false, err
		}
		got.Sessions++
		got.Rows += hiddenRows
	}
	return got, next, more, nil
}

// apply removes u (or counts it in a dry run) if it is still due; it
// returns the rows it removed and whether it removed anything.
func (sw *sweeper) apply(tx Tx, sk *sweepKind, d due, u unit) (int64, bool, error) {
	switch sk.kind {
	case store.PolicyMessagesKeepLast:
		return sw.trim(tx, d, u)
	case store.PolicyOrphanState:
		return sw.orphan(tx, u)
	}
	rows := int64(1)
	if sk.rowsSQL != "" {
		if err := tx.Get(&rows, sk.rowsSQL, sk.rowsArgs(u)...); err != nil {
			return 0, false, err
		}
	}
	if sw.opts.DryRun {
		return rows, true, nil
	}
	if sk.kind == store.PolicyGovernedEnded {
		var gone struct {
			AgentID   string `db:"agent_id"`
			Status    string `db:"status"`
			AuditSeq  int64  `db:"audit_seq"`
			AuditHash string `db:"audit_hash"`
			Tenant    string `db:"tenant"`
		}
		err := tx.Get(&gone, sk.removeSQL, sk.removeArgs(d, u)...)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		// The removal goes on the agent's chain with the session chain's
		// final head, as Cleanup's do, so the chain verifies afterwards;
		// the chain is the agent's within the session's tenant.
		err = sw.r.s.WithTenant(gone.Tenant).AuditRemoval(tx, sw.nowUS, store.AuditCleanup, gone.AgentID, u.id,
			RemovalDetail{Status: gone.Status, FinalSeq: gone.AuditSeq, FinalHash: gone.AuditHash})
		return rows, err == nil, err
	}
	res, err := tx.Exec(sk.removeSQL, sk.removeArgs(d, u)...)
	if err != nil {
		return 0, false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return 0, false, err
	}
	if sk.kind == store.PolicyAgentSessionsIdle {
		if err := dropRetired(tx, u.pk); err != nil {
			return 0, false, err
		}
	}
	if sk.kind == store.PolicyConversationsIdle {
		// removeSQL only checked that it is due: the delete keeps what
		// its forks read (conv_lineage.go).
		c, err := sw.convsOf(tx, u.id)
		if errors.Is(err, store.ErrNotFound) {
			return 0, false, nil
		} else if err != nil {
			return 0, false, err
		}
		if _, err := c.deleteTx(tx, u.id); err != nil {
			return 0, false, err
		}
	}
	return rows, true, nil
}

// trim removes the messages of conversation u beyond its last keepLast,
// unless it is held.
func (sw *sweeper) trim(tx Tx, d due, u unit) (int64, bool, error) {
	if u.weight <= d.keepLast {
		return 0, false, nil
	}
	var held int64
	if err := tx.Get(&held, convHeldSQL, u.id); err != nil || held > 0 {
		return 0, false, err
	}
	if sw.opts.DryRun {
		if sw.idle != nil && u.at <= sw.idle.cutoff && u.pk <= sw.idle.readsCap {
			return 0, false, nil // not held: conversations_idle removes it first
		}
		var n int64
		if err := tx.Get(&n, trimCountSQL, u.id, d.keepLast); err != nil {
			return 0, false, err
		}
		return n, n > 0, nil
	}
	c, err := sw.convsOf(tx, u.id)
	if err == nil {
		err = c.lockConv(tx, u.id)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, false, nil
		}
		return 0, false, err
	}
	// The same trim as TrimMessages: what forks read stays.
	n, err := c.trimTx(tx, u.id, d.keepLast)
	return n, err == nil && n > 0, err
}

// convTenantSQL reads the tenant of a conversation.
const convTenantSQL = `SELECT tenant FROM conversations WHERE id = ?`

// convsOf returns the conversation facet of the tenant of conversation
// id: the store's sweep removes and trims every tenant's conversations,
// and the facet's statements name the tenant. A conversation gone
// meanwhile is ErrNotFound.
func (sw *sweeper) convsOf(tx Tx, id string) (*Conversations, error) {
	var tenant string
	if err := tx.Get(&tenant, convTenantSQL, id); errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	} else if err != nil {
		return nil, err
	}
	if tenant == removingTenant {
		return nil, notFound(id) // being removed (sweep_staged.go)
	}
	if tenant == sw.r.s.tenant {
		return &Conversations{s: sw.r.s}, nil
	}
	return &Conversations{s: sw.r.s.WithTenant(tenant)}, nil
}

// orphan removes the state of an app (u.at == 0) or of an (app, user)
// pair (u.at == 1) if no agent session refers to it.
func (sw *sweeper) orphan(tx Tx, u unit) (int64, bool, error) {
	count, del, args := orphanAppCountSQL, orphanAppDeleteSQL, []any{u.id}
	if u.at == 1 {
		count, del, args = orphanUserCountSQL, orphanUserDeleteSQL, []any{u.id, u.key2}
	}
	var n int64
	if sw.opts.DryRun {
		err := tx.Get(&n, count, args...)
		return n, n > 0, err
	}
	res, err := tx.Exec(del, args...)
	if err != nil {
		return 0, false, err
	}
	n, err = res.RowsAffected()
	return n, n > 0, err
}

// SweepStatement is one statement a sweep runs, for the plan tests of the
// backends.
type SweepStatement struct {
	// Name says where the sweep runs it.
	Name string
	// SQL is the statement text, with "?" or "?N" parameters.
	SQL string
	// Args are sample arguments of the right types.
	Args []any
}

// SweepStatements returns every statement a sweep (and its size budget)
// runs on the facets' tables.
func SweepStatements() []SweepStatement {
	d := due{cutoff: 1, readsCap: math.MaxInt64, keepLast: 1}
	u := unit{at: 1, id: "x", key2: "y", pk: 1}
	var out []SweepStatement
	add := func(name, query string, args []any) {
		if query != "" {
			out = append(out, SweepStatement{Name: name, SQL: query, Args: args})
		}
	}
	add(string(store.PolicyAuditCheckpointed)+" agents", auditAgentsAfterSQL, []any{"", "agent", sweepPage, 1, ""})
	for _, q := range []string{auditCheckpointSQL, auditPruneCountSQL, auditPruneSQL, auditAgentSQL} {
		add(string(store.PolicyAuditCheckpointed)+" statement", q, []any{"agent", int64(1), ""})
	}
	add(string(store.PolicyAuditCheckpointed)+" first", auditFirstSQL, []any{"agent", ""})
	add(string(store.PolicyAuditCheckpointed)+" head", auditHeadOfSQL, []any{"agent", ""})
	for i, q := range removalBatches[1:] {
		add(fmt.Sprintf("removal rows %d", i+1), q, []any{"x", int64(10)})
	}
	for _, sk := range sweepKinds {
		for _, src := range sk.sources {
			add(string(sk.kind)+" walk "+src.name, src.nextSQL, src.args(d, u, sweepPage))
		}
		if sk.removeSQL != "" {
			add(string(sk.kind)+" remove", sk.removeSQL, sk.removeArgs(d, u))
		}
		if sk.rowsSQL != "" {
			add(string(sk.kind)+" rows", sk.rowsSQL, sk.rowsArgs(u))
		}
		if sk.heldSQL != "" {
			add(string(sk.kind)+" held", sk.heldSQL, sk.heldArgs(d))
		}
	}
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"keep-last held", convHeldSQL, []any{"x"}},
		{"conversation's tenant", convTenantSQL, []any{"x"}},
		{"keep-last count", trimCountSQL, []any{"x", int64(1)}},
		{"keep-last last", msgLastSQL, []any{"x"}},
		{"keep-last delete", msgDeleteHeadSQL, []any{"x", int64(1)}},
		{"keep-last count update", convCountSQL, []any{int64(1), 0, 0, "x"}},
		{"orphan app count", orphanAppCountSQL, []any{"x"}},
		{"orphan app delete", orphanAppDeleteSQL, []any{"x"}},
		{"orphan user count", orphanUserCountSQL, []any{"x", "y"}},
		{"orphan user delete", orphanUserDeleteSQL, []any{"x", "y"}},
		{"log trim", sweepLogTrimSQL, []any{int64(sweepLogKeep)}},
		{"log read", sweepLogSelectSQL, []any{int64(10)}},
		{"lease take", leaseTakeSQL, []any{"h", int64(1), int64(1)}},
		{"removal hide conversation", convMarkRemovalSQL, []any{"x", int64(1), int64(1), removingTenant}},
		{"removal record", removalInsertSQL, []any{removalConversation, "x", "", int64(1)}},
		{"removal tenant", removalTenantSQL, []any{removalConversation, "x"}},
		{"removal end", removalDeleteSQL, []any{removalConversation, "x"}},
		{"removal pending", removalNextSQL, []any{"", "", int64(sweepPage)}},
		{"removal unhide", convUnhideSQL, []any{"", "x"}},
		{"removal conversation floor", removalReadFloorSQL, []any{"x"}},
		{"removal messages", removalBatches[0], []any{"x", int64(0), int64(10)}},
		{"removal hide agent session", agentMarkRemovalSQL, []any{int64(1), int64(1), int64(1)}},
		{"removal agent floor", agentReadFloorSQL, []any{int64(1)}},
		{"removal events", agentRemovalBatchSQL, []any{int64(1), int64(0), int64(10)}},
		{"removal state log", agentLogBatchSQL, []any{int64(1), int64(0), int64(10)}},
	} {
		add(q.name, q.sql, q.args)
	}
	return out
}
