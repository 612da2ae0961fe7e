package sqlcore

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Lineage of conversations (migration 00015). A conversation reads the
// positions below its fork_next from its lineage parent's view and holds
// its own messages from fork_next on. The parent is a conversation or a
// retired history (conversation_retired): what a deleted or rewritten
// conversation's forks still read, or what a rewind superseded. Reads walk
// the chain with walkLineage, the walker agent sessions use too.

// retiredPrefix begins every retired history's id: ValidateID refuses
// control characters, so no conversation has such an id and no call that
// takes a conversation id reaches a retired one.
const retiredPrefix = "\x1fretired/"

// Kinds of retired histories (conversation_retired.kind).
const (
	retiredDeleted    = 1
	retiredSuperseded = 2
)

func isRetired(id string) bool { return strings.HasPrefix(id, retiredPrefix) }

func newRetiredID() string { return retiredPrefix + uuid.NewString() }

// nowMS is the store's clock in stored milliseconds.
func (c *Conversations) nowMS() int64 { return rowcodec.ToMillis(c.s.now()) }

// lineRow is a conversation's lineage as stored.
type lineRow struct {
	LineageParent sql.NullString `db:"lineage_parent"`
	ForkNext      int64          `db:"fork_next"`
	FirstSeq      int64          `db:"first_seq"`
	// DataKey names the conversation's data key ('' = plaintext).
	DataKey string `db:"data_key"`
}

const lineColumns = `lineage_parent, fork_next, first_seq, data_key`

// convView is what a read of a conversation (or of a retired history)
// walks: its own rows, then its parent's view below forkNext; nothing
// below first.
type convView struct {
	id, parent      string
	forkNext, first int64
	key             string // data key id of id's own rows
}

func (l lineRow) view(id string) convView {
	return convView{id: id, parent: l.LineageParent.String, forkNext: l.ForkNext, first: l.FirstSeq, key: l.DataKey}
}

const (
	convLineSQL = `SELECT ` + lineColumns + ` FROM conversations WHERE id = ? AND tenant = ?`
	// Lineage of one ancestor, a conversation or a retired history.
	convParentSQL    = `SELECT COALESCE(lineage_parent, ''), fork_next, data_key FROM conversations WHERE id = ?`
	retiredParentSQL = `SELECT COALESCE(lineage_parent, ''), fork_next, data_key FROM conversation_retired WHERE id = ?`

	// Spans of one row's own messages, seq in [?, ?).
	msgSpanSQL         = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq LIMIT ?`
	msgSpanDescSQL     = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	msgSummarySQL      = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? AND compact_to IS NOT NULL AND seq >= ? AND seq < ? ORDER BY seq DESC LIMIT 1`
	heldSpanSQL        = `SELECT ` + msgColumns + ` FROM conversation_retired_messages WHERE holder_id = ? AND seq >= ? AND seq < ? ORDER BY seq LIMIT ?`
	heldSpanDescSQL    = `SELECT ` + msgColumns + ` FROM conversation_retired_messages WHERE holder_id = ? AND seq >= ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	heldSummarySQL     = `SELECT ` + msgColumns + ` FROM conversation_retired_messages WHERE holder_id = ? AND compact_to IS NOT NULL AND seq >= ? AND seq < ? ORDER BY seq DESC LIMIT 1`
	msgCompactionsSQL  = `SELECT seq, compact_from, compact_to FROM conversation_messages WHERE session_id = ? AND compact_to IS NOT NULL`
	heldCompactionsSQL = `SELECT seq, compact_from, compact_to FROM conversation_retired_messages WHERE holder_id = ? AND compact_to IS NOT NULL`

	// What a rewrite must keep: is any row reading id's view at or above
	// a position (fork_next > position)?
	convReadersSQL = `SELECT CASE WHEN EXISTS (SELECT 1 FROM conversations WHERE lineage_parent = ? AND fork_next > ?)
		OR EXISTS (SELECT 1 FROM conversation_retired WHERE lineage_parent = ? AND fork_next > ?) THEN 1 ELSE 0 END`

	// A retired history, and the messages it holds, belong to the tenant
	// of the conversation they come from (migration 18).
	retiredInsertSQL = `INSERT INTO conversation_retired (id, kind, lineage_parent, fork_next, superseded_of, superseded_from, created_at_ms, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	msgRetireSQL = `INSERT INTO conversation_retired_messages (holder_id, seq, role, content, created_at_ms, compact_from, compact_to, tenant)
		SELECT ?, seq, role, content, created_at_ms, compact_from, compact_to, tenant FROM conversation_messages WHERE session_id = ? AND seq >= ?`
	msgDeleteTailSQL   = `DELETE FROM conversation_messages WHERE session_id = ? AND seq >= ?`
	convRepointSQL     = `UPDATE conversations SET lineage_parent = ? WHERE lineage_parent = ? AND fork_next > ?`
	retiredRepointSQL  = `UPDATE conversation_retired SET lineage_parent = ? WHERE lineage_parent = ? AND fork_next > ? AND id <> ?`
	convSetLineSQL     = `UPDATE conversations SET lineage_parent = ?, fork_next = ? WHERE id = ?`
	convClearLineSQL   = `UPDATE conversations SET lineage_parent = NULL, fork_next = 0, first_seq = 0 WHERE id = ?`
	retiredInfoSQL     = `SELECT kind, COALESCE(lineage_parent, ''), COALESCE(superseded_of, '') FROM conversation_retired WHERE id = ?`
	retiredDropSQL     = `DELETE FROM conversation_retired WHERE id = ?`
	retiredOfSQL       = `SELECT id FROM conversation_retired WHERE superseded_of = ? ORDER BY rewound_version`
	retiredOrphanSQL   = `UPDATE conversation_retired SET kind = 1, superseded_of = NULL WHERE id = ?`
	msgDropBelowSQL    = `DELETE FROM conversation_messages WHERE session_id = ? AND seq < (SELECT first_seq FROM conversations WHERE id = ?)`
	convFirstSeqSQL    = `UPDATE conversations SET first_seq = ? WHERE id = ?`
	convRetiredAnySQL  = `SELECT count(*) FROM conversation_retired WHERE id = ?`
	retiredMsgCountSQL = `SELECT count(*) FROM conversation_retired_messages WHERE holder_id = ?`
)

// lineSeg is the part of one row's rows in a view: its own rows below hi
// (hi < 0: all of them).
type lineSeg[K comparable] struct {
	id K
	hi int64
}

// walkLineage returns the segments of a view, newest first: the row's
// own, then each ancestor's below the fork point under it. parent and hi
// are the row's lineage parent and fork point; parentOf reads an
// ancestor's. A fork point bounds what is read from the parent: agent
// sessions read positions <= it, conversations positions < it; both stop
// at a fork point of 0, where nothing is read.
func walkLineage[K comparable](own, parent K, hi int64, parentOf func(K) (K, int64, error)) ([]lineSeg[K], error) {
	var zero K
	segs := []lineSeg[K]{{id: own, hi: -1}}
	for parent != zero && hi > 0 {
		if len(segs) > maxLineageDepth {
			return nil, fmt.Errorf("sqlcore: lineage deeper than %d", maxLineageDepth)
		}
		next, fork, err := parentOf(parent)
		if err != nil {
			return nil, err
		}
		segs = append(segs, lineSeg[K]{id: parent, hi: hi})
		parent, hi = next, min(hi, fork)
	}
	return segs, nil
}

// convSegments walks a conversation view's lineage. It returns, for
// each segment, the id of the data key its rows are sealed with.
func convSegments(r Tx, v convView) ([]lineSeg[string], []string, error) {
	kids := []string{v.key}
	segs, err := walkLineage(v.id, v.parent, v.forkNext, func(id string) (string, int64, error) {
		q := convParentSQL
		if isRetired(id) {
			q = retiredParentSQL
		}
		var next, kid string
		var fork int64
		err := scanHot(r, q, []any{id}, &next, &fork, &kid)
		if errors.Is(err, sql.ErrNoRows) {
			return "", 0, fmt.Errorf("%w: conversation lineage names a missing history %q", store.ErrCorrupt, id)
		}
		kids = append(kids, kid)
		return next, fork, err
	})
	return segs, kids, err
}

// spanSQL returns the span statements of a segment's table.
func spanSQL(id string) (asc, desc, summary string) {
	if isRetired(id) {
		return heldSpanSQL, heldSpanDescSQL, heldSummarySQL
	}
	return msgSpanSQL, msgSpanDescSQL, msgSummarySQL
}

func segHi(sg lineSeg[string]) int64 {
	if sg.hi < 0 {
		return 1<<62 - 1
	}
	return sg.hi
}

// readView reads up to limit messages of view v with from <= seq <
// before, oldest first: one index range per segment.
func (c *Conversations) readView(r Tx, v convView, from, before int64, limit int) ([]msgRow, error) {
	segs, kids, err := convSegments(r, v)
	if err != nil {
		return nil, err
	}
	from = max(from, v.first)
	var out []msgRow
	for i := len(segs) - 1; i >= 0 && len(out) < limit; i-- {
		sg := segs[i]
		hi := min(segHi(sg), before)
		if hi <= from {
			continue
		}
		asc, _, _ := spanSQL(sg.id)
		var rows []msgRow
		if err := r.Select(&rows, asc, sg.id, from, hi, limit-len(out)); err != nil {
			return nil, err
		}
		if err := c.s.openMsgRows(kids[i], rows); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// readViewDesc reads the last limit messages of view v below before,
// and returns them oldest first.
func (c *Conversations) readViewDesc(r Tx, v convView, before int64, limit int) ([]msgRow, error) {
	segs, kids, err := convSegments(r, v)
	if err != nil {
		return nil, err
	}
	var out []msgRow
	for i, sg := range segs {
		if len(out) >= limit {
			break
		}
		hi := min(segHi(sg), before)
		if hi <= v.first {
			continue
		}
		_, desc, _ := spanSQL(sg.id)
		var rows []msgRow
		if err := r.Select(&rows, desc, sg.id, v.first, hi, limit-len(out)); err != nil {
			return nil, err
		}
		if err := c.s.openMsgRows(kids[i], rows); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	slices.Reverse(out)
	return out, nil
}

// latestSummary reads the view's latest compaction record.
func (c *Conversations) latestSummary(r Tx, v convView) (msgRow, bool, error) {
	segs, kids, err := convSegments(r, v)
	if err != nil {
		return msgRow{}, false, err
	}
	for i, sg := range segs {
		hi := segHi(sg)
		if hi <= v.first {
			continue
		}
		_, _, q := spanSQL(sg.id)
		var row msgRow
		err := r.Get(&row, q, sg.id, v.first, hi)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err == nil {
			rows := []msgRow{row}
			if err = c.s.openMsgRows(kids[i], rows); err == nil {
				row = rows[0]
			}
		}
		return row, err == nil, err
	}
	return msgRow{}, false, nil
}

// nextPos returns the position of a conversation's next message: after
// its last own message, and never below its fork point or the start of
// its view.
func nextPos(tx Tx, id string, forkNext, first int64) (int64, error) {
	next, err := nextSeq(tx, msgLastSQL, id)
	if err != nil {
		return 0, err
	}
	return max(next, forkNext, first), nil
}

// compactArgs are a message's compaction columns.
func compactArgs(r *store.CompactionRange) (from, to any) {
	if r == nil {
		return nil, nil
	}
	return r.From, r.To
}

// hasReaders tells whether a row reads id's view at positions >= at.
func hasReaders(tx Tx, id string, at int64) (bool, error) {
	var n int64
	if err := tx.Get(&n, convReadersSQL, id, at, id, at); err != nil {
		return false, err
	}
	return n > 0, nil
}

// cutTail takes the messages of conversation id at positions >= s out of
// its view. What other rows read of them (forks; superseded runs), and
// all of them when kind is retiredSuperseded, go to a new retired
// history that reads what id read below s, and those readers are
// repointed to it, so they keep reading exactly what they read. It
// returns the retired history's id ("" when none was needed).
func (c *Conversations) cutTail(tx Tx, id string, l lineRow, s int64, kind int, now int64) (string, error) {
	readers, err := hasReaders(tx, id, s)
	if err != nil {
		return "", err
	}
	parent := l.LineageParent.String
	if kind == retiredDeleted && !readers {
		if _, err := tx.Exec(msgDeleteTailSQL, id, s); err != nil {
			return "", err
		}
		if s < l.ForkNext {
			if s == 0 {
				if _, err := tx.Exec(convSetLineSQL, nil, 0, id); err != nil {
					return "", err
				}
				return "", c.prune(tx, parent)
			}
			if _, err := tx.Exec(convSetLineSQL, parent, s, id); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	h := newRetiredID()
	hp, hf := id, s
	if s < l.ForkNext {
		hp, hf = parent, l.ForkNext
	}
	var hpArg, ofArg any
	if hf > 0 && hp != "" {
		hpArg = hp
	}
	if kind == retiredSuperseded {
		ofArg = id
	}
	if _, err := tx.Exec(retiredInsertSQL, h, kind, hpArg, hf, ofArg, s, now, c.s.tenant); err != nil {
		return "", err
	}
	if err := setRetiredKey(tx, h, l.DataKey); err != nil { // conv_crypt.go
		return "", err
	}
	if _, err := tx.Exec(msgRetireSQL, h, id, s); err != nil {
		return "", err
	}
	if _, err := tx.Exec(msgDeleteTailSQL, id, s); err != nil {
		return "", err
	}
	if _, err := tx.Exec(convRepointSQL, h, id, s); err != nil {
		return "", err
	}
	if _, err := tx.Exec(retiredRepointSQL, h, id, s, h); err != nil {
		return "", err
	}
	if s < l.ForkNext {
		var p any
		if s > 0 {
			p = parent
		}
		if _, err := tx.Exec(convSetLineSQL, p, s, id); err != nil {
			return "", err
		}
	}
	return h, nil
}

// detachHistory is the first step of replacing conversation id's history
// (Save): its rows that others read move to a retired history, and the
// conversation becomes a root again.
func (c *Conversations) detachHistory(tx Tx, id string) error {
	var l lineRow
	if err := tx.Get(&l, convLineSQL, id, c.s.tenant); err != nil {
		return err
	}
	if l.LineageParent.Valid || l.FirstSeq > 0 {
		if _, err := c.cutTail(tx, id, l, 0, retiredDeleted, c.nowMS()); err != nil {
			return err
		}
	} else if readers, err := hasReaders(tx, id, 0); err != nil {
		return err
	} else if readers {
		if _, err := c.cutTail(tx, id, l, 0, retiredDeleted, c.nowMS()); err != nil {
			return err
		}
	}
	_, err := tx.Exec(convClearLineSQL, id)
	return err
}

// deleteTx deletes conversation id, keeping what forks read in a
// retired history; false when there is no such conversation.
func (c *Conversations) deleteTx(tx Tx, id string) (bool, error) {
	if err := c.lockConv(tx, id); errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var l lineRow
	if err := tx.Get(&l, convLineSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	// Superseded runs of the conversation go with it, unless forks read
	// them.
	var runs []string
	if err := tx.Select(&runs, retiredOfSQL, id); err != nil {
		return false, err
	}
	var prune []string
	for _, h := range runs {
		readers, err := hasReaders(tx, h, 0)
		if err != nil {
			return false, err
		}
		if readers {
			if _, err := tx.Exec(retiredOrphanSQL, h); err != nil {
				return false, err
			}
			continue
		}
		var kind int64
		var parent, of string
		if err := scanHot(tx, retiredInfoSQL, []any{h}, &kind, &parent, &of); err != nil {
			return false, err
		}
		if _, err := tx.Exec(retiredDropSQL, h); err != nil {
			return false, err
		}
		if parent != id {
			prune = append(prune, parent)
		}
	}
	if _, err := c.cutTail(tx, id, l, 0, retiredDeleted, c.nowMS()); err != nil {
		return false, err
	}
	if _, err := tx.Exec(convDeleteSQL, id, c.s.tenant); err != nil {
		return false, err
	}
	for _, p := range prune {
		if err := c.prune(tx, p); err != nil {
			return false, err
		}
	}
	return true, nil
}

// prune drops the retired histories from id up its lineage that nothing
// reads any more (a superseded run stays while its conversation is
// live), and the rows a live conversation kept below the start of its
// view for readers it no longer has.
func (c *Conversations) prune(tx Tx, id string) error {
	for depth := 0; id != "" && depth < maxLineageDepth; depth++ {
		readers, err := hasReaders(tx, id, 0)
		if err != nil || readers {
			return err
		}
		if !isRetired(id) {
			_, err := tx.Exec(msgDropBelowSQL, id, id)
			return err
		}
		// Two writers pruning forks of one retired history serialize
		// here, so one of them sees the other's fork gone.
		if err := c.s.lockKey(tx, lockClassConversation, id); err != nil {
			return err
		}
		if readers, err := hasReaders(tx, id, 0); err != nil || readers {
			return err
		}
		var kind int64
		var parent, of string
		err = scanHot(tx, retiredInfoSQL, []any{id}, &kind, &parent, &of)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if kind == retiredSuperseded && of != "" {
			return nil
		}
		if _, err := tx.Exec(retiredDropSQL, id); err != nil {
			return err
		}
		id = parent
	}
	return nil
}

// restoreForkPoint restores conversation id, being imported with msgs at
// positions seqs, as a fork of fp.ID when that conversation's view holds
// the same messages up to fp.At: it records the lineage and returns how
// many of msgs the fork reads from it (0 when it is restored flat).
func (w *recordWriter) restoreForkPoint(id string, fp *store.ConversationForkPoint, msgs []store.Message, contents [][]byte, seqs []int64) (int, error) {
	if fp == nil || len(msgs) == 0 || fp.ID == id || fp.At < seqs[0] || fp.At > seqs[len(seqs)-1] {
		return 0, nil
	}
	var l lineRow
	if err := w.tx.Get(&l, convLineSQL, fp.ID, w.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	n := int(fp.At-seqs[0]) + 1
	c := &Conversations{s: w.s}
	rows, err := c.readView(w.tx, l.view(fp.ID), seqs[0], fp.At+1, n+1)
	if err != nil {
		return 0, err
	}
	if len(rows) != n {
		return 0, nil
	}
	for i, r := range rows {
		m := msgs[i]
		from, to := compactArgs(m.Compaction)
		same := r.Seq == seqs[i] && r.Role == m.Role && string(r.body()) == string(contents[i]) &&
			r.CreatedAtMS == w.or(m.CreatedAt) && sameNull(r.CompactFrom, from) && sameNull(r.CompactTo, to)
		if !same {
			return 0, nil
		}
	}
	if _, err := w.tx.Exec(`UPDATE conversations SET lineage_parent = ?, fork_next = ?, first_seq = ? WHERE id = ?`,
		fp.ID, fp.At+1, seqs[0], id); err != nil {
		return 0, err
	}
	return n, nil
}

func sameNull(v sql.NullInt64, a any) bool {
	if a == nil {
		return !v.Valid
	}
	return v.Valid && v.Int64 == a.(int64)
}
