package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// The transaction of a batch of governed Use calls (see usebatch.go for the
// queue that forms it): its statements, sent in one pipeline with the
// BEGIN (decideBatch), its COMMIT, and what an error in that pipeline
// means for the calls (batchTx, pipelineErr, commitErr).

// errBusy rolls back a batch whose lock-first step found rows of its
// sessions locked by other transactions; runUses reruns it without the
// calls of those sessions, which are decided apart.
var errBusy = errors.New("pgstore: use batch reruns without the calls of sessions locked elsewhere")

// errWary rolls back a batch that went without the lock-first step
// (govUseManyFirstSQL) and found a row of its sessions held by another
// transaction; runUses reruns it with that step, which finds which.
var errWary = errors.New("pgstore: use batch reruns with its rows locked first")

// useLockManySQL locks the rows of sessions $2 of tenant $1 that no other
// transaction holds, in id order, without waiting for any (SKIP LOCKED),
// and returns the ids of the others: the rows that exist but are locked by
// another transaction. (Ids of no row are in neither: their calls are
// refused on the locked row, which locks nothing.) EXCEPT reads both sides
// whole, so every row the first can lock is locked.
//
// It also bounds how long the statements after it in the transaction wait
// for a lock, to 1 ms (set_config(…, true) is SET LOCAL, and this
// statement waits for no row itself, so it can set it): the calls'
// statements touch only rows it locked, so they wait for none, unless it
// found a row held elsewhere: their statements on that row, sent in the
// same pipeline before its answer is read, then give up after that wait,
// and the batch reruns without them. Set here rather than by a statement
// of its own, it costs a batch no statement; set on the connection rather
// than the transaction, it would have to be reset before the connection
// served any other work. useLockAfterSQL, which waits for the COMMIT of a
// batch of the same queue, runs before it.
const useLockManySQL = useLockSideSQL + `, set_config('lock_timeout', '1ms', true)`

// useLockSideSQL is useLockManySQL for a side queue's batch: it sets no
// lock wait, so that the statements after it wait for the row it found
// held.
const useLockSideSQL = `WITH locked AS MATERIALIZED (
		SELECT id FROM governed_sessions
		WHERE tenant = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE SKIP LOCKED)
	SELECT ARRAY(SELECT id FROM governed_sessions WHERE tenant = $1 AND id = ANY($2::text[])
		EXCEPT SELECT id FROM locked)`

// useLockAfterSQL locks the rows of sessions $2 of tenant $1 that a batch
// of the same queue holds while it commits, in id order, waiting for that
// COMMIT (before useLockManySQL bounds the waits).
const useLockAfterSQL = `SELECT id FROM governed_sessions
	WHERE tenant = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`

// commitUnknownError is a batch whose COMMIT was sent but not answered
// (the connection failed): whether it committed is unknown.
type commitUnknownError struct{ err error }

func (e *commitUnknownError) Error() string {
	return "pgstore: commit outcome unknown: " + e.err.Error()
}
func (e *commitUnknownError) Unwrap() error { return e.err }

// useBeginSQL opens a batch's transaction, as the first statement of its
// pipeline.
const useBeginSQL = `BEGIN ISOLATION LEVEL READ COMMITTED`

// batchTx decides the calls of batch not taken out in one transaction on
// a connection of its own: BEGIN rides in the pipeline of the calls'
// statements, and so does the COMMIT when no session has several calls
// (decideBatch: one round trip); otherwise the rows of the sessions with
// several calls are written in the COMMIT's pipeline (two round trips,
// when no call is refused). Nothing is left open on the connection
// whatever fails. An error before a pipeline with the COMMIT is sent
// means nothing was committed, as does an error the server reports for a
// statement before the COMMIT in it (the server skips the COMMIT); a
// pipeline sent without an answer to its COMMIT is a commitUnknownError.
// side is a side queue's batch (see decideBatch); held reports that its
// lock-first step found the row held. release is called once the
// statements have run, before the COMMIT's answer (handover).
func (g *Governance) batchTx(ctx context.Context, q *useQueue, batch []*useCall, side bool, release func()) (held bool, err error) {
	conn, err := g.s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// A connection left inside a transaction (a failed ROLLBACK) is
	// destroyed by Release, never reused.
	defer conn.Release()
	rollback := func() {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			conn.Exec(ctx, `ROLLBACK`)
		}
	}
	// handover runs once the batch's statements have run, before the
	// answer to its COMMIT: the next batches of the queue wait for this
	// COMMIT before locking these rows, rather than finding them held,
	// and the leader's turn is given back.
	var done chan struct{}
	handover := func() {
		if done != nil {
			return
		}
		done = make(chan struct{})
		if q != nil {
			q.mu.Lock()
			if q.committing == nil {
				q.committing = make(map[string]chan struct{})
			}
			for i, c := range batch {
				if !c.out && (i == 0 || batch[i-1].req.SessionID != c.req.SessionID) {
					q.committing[c.req.SessionID] = done
				}
			}
			q.mu.Unlock()
		}
		release()
	}
	defer func() {
		if done == nil {
			return
		}
		if q != nil {
			q.mu.Lock()
			for id, ch := range q.committing {
				if ch == done {
					delete(q.committing, id)
				}
			}
			q.mu.Unlock()
		}
		close(done)
	}()
	held, writes, committed, err := g.decideBatch(ctx, conn, batch, side, handover)
	if err != nil {
		rollback()
		return held, err
	}
	if committed {
		return held, nil
	}
	handover()
	var tag pgconn.CommandTag
	var refused bool
	if writes == nil {
		tag, err = conn.Exec(ctx, `COMMIT`)
	} else {
		tag, refused, err = commitWrites(ctx, conn, writes)
	}
	switch {
	case err != nil && refused:
		// The server answered a write with an error, and skipped the
		// COMMIT after it (or its session ended there): nothing
		// committed.
		rollback()
		return held, err
	case err != nil:
		var unknown *commitUnknownError
		if err = commitErr(err); !errors.As(err, &unknown) {
			rollback()
		}
		return held, err
	}
	return held, committedTag(tag)
}

// committedTag is the error of a COMMIT the server answered with tag:
// none when it committed; a transaction that had failed is rolled back
// by its COMMIT, whose tag then says ROLLBACK.
func committedTag(tag pgconn.CommandTag) error {
	if tag.String() != "COMMIT" {
		return fmt.Errorf("pgstore: use batch rolled back at commit (%s)", tag)
	}
	return nil
}

// commitErr is the error of a COMMIT that failed: the server's refusal
// (rolled back), or, when no answer came or the server's session ended in
// it (a COMMIT may have committed locally before such an end), a
// commitUnknownError.
func commitErr(err error) error {
	if pgCode(err) == "" || sessionEnded(err) {
		return &commitUnknownError{err: err}
	}
	return err
}

// pipelineErr is the error met reading the answer to a statement of a
// pipeline that holds the COMMIT after it, once the pipeline is closed:
// an error the server answered makes it skip the COMMIT (nothing
// committed), as does any error that leaves the connection in a failed
// transaction; otherwise the COMMIT may have run, and its outcome is
// unknown.
func pipelineErr(conn *pgxpool.Conn, err error) error {
	if pgCode(err) != "" {
		return err
	}
	if st := conn.Conn().PgConn().TxStatus(); st == 'E' || st == 'T' {
		return err
	}
	return &commitUnknownError{err: err}
}

// commitWrites sends the rows a batch writes (useWriteGroupSQL, one
// statement per session) and the COMMIT in one pipeline, and returns the
// COMMIT's tag, or the first error; refused reports an error the server
// answered to a write. The pipeline ends in one Sync, so a write the
// server refuses makes it skip every message up to that Sync, the COMMIT
// too: the transaction is then left failed, never committed. A write
// that finds no row fails in the server (useWriteGroupSQL), for the same
// reason: its COMMIT must not run. An error without the server's answer
// (the connection failed) is the COMMIT's: it was sent.
func commitWrites(ctx context.Context, conn *pgxpool.Conn, writes *pgx.Batch) (tag pgconn.CommandTag, refused bool, err error) {
	n := writes.Len()
	writes.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, writes)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			if pgCode(err) == codeDivisionByZero {
				err = fmt.Errorf("%w: %w", errNoGroupRow, err)
			}
			return pgconn.CommandTag{}, pgCode(err) != "", err
		}
	}
	tag, err = br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, false, err
}

// sessionEnded reports whether err is the server ending its session (an
// error of severity FATAL or PANIC: a terminated backend, a shutdown).
func sessionEnded(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	sev := pe.SeverityUnlocalized
	if sev == "" {
		sev = pe.Severity
	}
	return sev == "FATAL" || sev == "PANIC"
}

// decideBatch opens a transaction on conn and decides the calls of batch
// not taken out (sorted by session id) in it, in one round trip with the
// BEGIN: the rows of their sessions locked first, in id order, skipping
// those other transactions hold; of the sessions with one call, the calls
// of one tool in one statement for them all (govUseManySQL, when there
// are two or more), the other calls each in its conditional UPDATE; the
// rows of the sessions with several calls read; then the calls the
// UPDATEs refused, on their locked rows; then the calls of the sessions
// with several decided on their rows (decideGroup). It returns the writes
// of those rows, one statement per session (nil: none), which the caller
// sends in the COMMIT's pipeline (commitWrites). When the lock-first step
// found rows held elsewhere, and a statement gave up on them, it marks
// their calls out and returns errBusy. The caller commits, or rolls back
// on error.
//
// A batch without sessions of several calls, of a tenant's queue, sends
// the COMMIT in the statements' pipeline, with a Flush message before it
// (pipeline_flush.go: the server answers the statements before it runs
// the COMMIT), calls handover once their answers are read, and returns
// committed once the COMMIT's answer is;
// the calls its UPDATEs refused are marked late, to be decided after it
// (decideLate). Such a batch whose calls all go in the statement for
// many, none of whose rows a batch of the queue holds, and none of whose
// calls is wary, sends no lock-first step (govUseManyFirstSQL); when that
// statement gives up on a row held elsewhere, it marks its calls wary
// and returns errWary. An error the server did not answer, in that pipeline, is
// a commitUnknownError unless the connection is left in a failed
// transaction (pipelineErr).
//
// A side queue's batch (side: the calls of one session) sets no lock
// wait: when its lock-first step finds the row held (held), its
// statements wait for it, in the same pass, and it returns no errBusy.
func (g *Governance) decideBatch(ctx context.Context, conn *pgxpool.Conn, batch []*useCall, side bool, handover func()) (held bool, writes *pgx.Batch, committed bool, err error) {
	now := g.s.now()
	nowMS, nowUS := rowcodec.ToMillis(now), rowcodec.ToMicros(now)
	// The calls of sessions with two or more calls in the batch, decided
	// together on their rows (groups, usebatch_group.go); of the others,
	// the calls of the statement for many, and the rest.
	in, many := make([]*useCall, 0, len(batch)), make([]*useCall, 0, len(batch))
	var single []*useCall
	var groups [][]*useCall
	ids := make([]string, 0, len(batch))
	var after, grouped []string
	for i := 0; i < len(batch); {
		// The calls of one session not taken out: a run of in.
		start, j := len(in), i
		for ; j < len(batch) && batch[j].req.SessionID == batch[i].req.SessionID; j++ {
			if !batch[j].out {
				in = append(in, batch[j])
			}
		}
		i = j
		run := in[start:len(in):len(in)]
		if len(run) == 0 {
			continue
		}
		id := run[0].req.SessionID
		if run[0].after && !side {
			after = append(after, id)
		} else {
			ids = append(ids, id)
		}
		switch {
		case len(run) > 1:
			groups = append(groups, run)
			grouped = append(grouped, id)
		case len(run[0].tools) == 1 && !g.s.cfg.auditOff:
			many = append(many, run[0])
		default:
			single = append(single, run[0])
		}
	}
	if len(many) < 2 {
		single = append(single, many...)
		many = nil
	}
	// The lock-first step, when a row of the batch is not held by a
	// batch of the queue that commits (ids; a side batch's one row is
	// always there). When every row is, and each is of a session with
	// several calls (one session's callers, batch after batch), the read
	// of their rows locks them, in id order, waiting for that COMMIT as
	// useLockAfterSQL would: no lock-first step bounds its wait.
	lockFirst := len(ids) > 0
	lockAfter := len(after) > 0 && (lockFirst || len(many)+len(single) > 0)
	// A batch without sessions of several calls (nothing to write after
	// its statements) sends its COMMIT in their pipeline: one round trip.
	// The server skips the COMMIT when a statement before it fails. The
	// calls its UPDATEs refuse are then decided after it (late, see
	// decideLate).
	early := !side && groups == nil && g.s.uses.hook == nil
	wary := false
	for _, c := range in {
		c.late = false
		wary = wary || c.wary
	}
	// Such a batch whose calls all go in the statement for many, and
	// whose rows no batch of the queue holds, goes without the lock-first
	// step: that statement locks its rows itself, waiting at most 1 ms
	// for any (govUseManyFirstSQL). A row held elsewhere then fails it,
	// and the batch reruns with the step (wary), which finds which rows.
	// The step is a statement of its own that writes a lock to every row
	// before the UPDATE writes it again: 32 callers on sessions of their
	// own cost the server 71-76 µs per call with it, 59-71 without (four
	// alternated pairs).
	first := early && !wary && many != nil && single == nil && len(after) == 0
	if first {
		lockFirst = false
	}
	b := &pgx.Batch{}
	b.Queue(useBeginSQL)
	tenant := g.tenant()
	if tenant != "" {
		b.Queue(govTenantSQL, tenant)
	}
	if lockAfter {
		b.Queue(useLockAfterSQL, tenant, after)
	}
	setup := b.Len()
	switch {
	case side:
		b.Queue(useLockSideSQL, tenant, ids)
	case lockFirst:
		b.Queue(useLockManySQL, tenant, ids)
	}
	if groups != nil {
		b.Queue(useReadGroupsSQL, tenant, grouped)
	}
	if many != nil {
		sids, agents, tools := make([]string, len(many)), make([]string, len(many)), make([]string, len(many))
		payloads, details := make([][]byte, len(many)), make([]string, len(many))
		var audits useAudits
		for i, c := range many {
			_, payload, detail, err := audits.payload(nowUS, "", c.req.SessionID, c.tools)
			if err != nil {
				return false, nil, false, err
			}
			sids[i], agents[i], tools[i], payloads[i], details[i] = c.req.SessionID, c.req.AgentID, c.tools[0], payload, detail
		}
		query := govUseManySQL
		if first {
			query = govUseManyFirstSQL
		}
		b.Queue(query, nowMS, sids, agents, tools, payloads, tenant, details, nowUS)
	}
	for _, c := range single {
		query, args, err := g.useStatement(now, c.req, c.tools)
		if err != nil {
			return false, nil, false, err
		}
		b.Queue(query, args...)
	}
	if early {
		b.Queue(`COMMIT`)
	}
	// With the COMMIT in the pipeline, the statements' answers are asked
	// for before it (pipeline_flush.go), so that handover runs while the
	// COMMIT waits for its WAL flush.
	var br pipelineResults
	if early && g.s.flush.on {
		fb, err := g.s.flush.sendFlushed(ctx, conn.Conn(), b)
		if err != nil { // nothing sent
			return false, nil, false, err
		}
		br = fb
	} else {
		br = conn.SendBatch(ctx, b)
	}
	var busy []string
	// fail closes the pipeline after err. With the COMMIT in it, an
	// error the server did not answer leaves its outcome unknown
	// (pipelineErr). When the lock-first step found rows held, the
	// statements on them gave up after the lock wait: the batch reruns
	// without their calls (errBusy).
	fail := func(err error) error {
		br.Close()
		if early {
			err = pipelineErr(conn, err)
		}
		var unknown *commitUnknownError
		if first && pgCode(err) == codeLockNotAvailable {
			// A row held elsewhere, found without the lock-first step:
			// rerun with it.
			for _, c := range in {
				c.wary = true
			}
			return errWary
		}
		if len(busy) > 0 && !side && !errors.As(err, &unknown) {
			for _, c := range in {
				if slices.Contains(busy, c.req.SessionID) {
					c.out = true
				}
			}
			return errBusy
		}
		return err
	}
	for range setup { // BEGIN, the tenant, the rows after a COMMIT
		if _, err := br.Exec(); err != nil {
			return false, nil, false, fail(err)
		}
	}
	switch {
	case side:
		err = br.QueryRow().Scan(&busy)
	case lockFirst:
		err = br.QueryRow().Scan(&busy, nil)
	}
	if err != nil {
		busy = nil
		return false, nil, false, fail(err)
	}
	// A side batch's statements wait for the row (the server answers
	// once they have run: it flushes its answers at the pipeline's end).
	// Other statements on a held row give up after the lock wait, and
	// their error is the rerun's cause, errBusy; without the COMMIT in
	// the pipeline, the batch need not read their answers. (With it, the
	// answers tell whether it committed: a row held by a lock that its
	// UPDATE does not wait for, a foreign key's, lets it commit.)
	if held = len(busy) > 0; held && !side && !early {
		return held, nil, false, fail(errBusy)
	}
	var groupRows map[string]*govHeadRow
	if groups != nil {
		if groupRows, err = readGroups(br.Query()); err != nil {
			return held, nil, false, fail(err)
		}
	}
	var refused []*useCall
	if many != nil {
		rows, err := br.Query()
		if err != nil {
			return held, nil, false, fail(err)
		}
		granted, err := pgx.AppendRows(make([]govRow, 0, len(many)), rows, govRowByPos)
		if err != nil {
			return held, nil, false, fail(err)
		}
		// Rows come back in no set order; a call without one was refused.
		byID := make(map[string]store.Session, len(granted))
		for i := range granted {
			byID[granted[i].ID] = granted[i].session()
		}
		for _, c := range many {
			if sess, ok := byID[c.req.SessionID]; ok {
				c.v = verdict{sess: sess}
			} else {
				refused = append(refused, c)
			}
		}
	}
	for _, c := range single {
		sess, err := scanGov(br.Query())
		switch {
		case err == nil:
			c.v = verdict{sess: sess}
		case errNoRows(err):
			refused = append(refused, c)
		default:
			return held, nil, false, fail(err)
		}
	}
	if early {
		// The statements have run, and the server commits.
		handover()
		tag, err := br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return held, nil, false, commitErr(err)
		}
		if err := committedTag(tag); err != nil {
			return held, nil, false, err
		}
		for _, c := range refused {
			c.late = true
		}
		return held, nil, true, nil
	}
	if err := br.Close(); err != nil {
		return held, nil, false, err
	}
	// The calls the UPDATEs refused are decided on the row the
	// transaction has locked: each is its session's only call in the
	// batch, so no other call of the batch saw that row.
	for _, c := range refused {
		var err error
		if c.v, err = g.decideLocked(ctx, conn, c.req, c.tools); err != nil {
			return held, nil, false, err
		}
	}
	// The calls of a session with several in the batch: decided in Go on
	// the row read under the lock, in queue order, and written with their
	// audit events in one statement per session, sent with the COMMIT
	// (batchTx).
	for _, run := range groups {
		w, err := g.decideGroup(now, groupRows[run[0].req.SessionID], run)
		if err != nil {
			return held, nil, false, err
		}
		if w != nil {
			if writes == nil {
				writes = &pgx.Batch{}
			}
			writes.Queue(useWriteGroupSQL, w.args(tenant)...)
		}
	}
	if g.s.uses.hook != nil {
		return held, writes, false, g.s.uses.hook(ctx, conn)
	}
	return held, writes, false, nil
}

// useAudits gives the payloads and details of the audit events of allowed
// uses (sqlcore.AuditPayload of sqlcore.UseAudit), for the calls of one
// batch: a call's detail depends only on its tools, and is encoded (as
// JSON) once for the calls of one tool in a row, rather than once per
// call; the payload, which holds the session's id, is built per call from
// the same record.
type useAudits struct {
	tool, detail string
	ok           bool
}

// payload returns the record of the event of an allowed use of tools by
// agent (which the payload does not hold) on session id, at atUS, with
// its payload and detail.
func (m *useAudits) payload(atUS int64, agent, id string, tools []string) (rec sqlcore.AuditRecord, payload []byte, detail string, err error) {
	rec = sqlcore.UseAudit(agent, id, "", tools)
	if len(tools) == 1 && m.ok && tools[0] == m.tool {
		return rec, rowcodec.AuditPayload(atUS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, m.detail), m.detail, nil
	}
	payload, detail, err = sqlcore.AuditPayload(atUS, rec)
	if err == nil && len(tools) == 1 {
		m.tool, m.detail, m.ok = tools[0], detail, true
	}
	return rec, payload, detail, err
}
