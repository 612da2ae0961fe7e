package sqlcore

import (
	"encoding/json"
	"fmt"
)

// Dialect holds what really differs between the databases the facets run
// on. Everything else is one statement text for all of them: both SQLite
// and PostgreSQL accept TRUE/FALSE, CAST(? AS BIGINT), row-value
// comparisons, ON CONFLICT ... DO UPDATE and RETURNING.
type Dialect struct {
	// Name is the database's name, for example "sqlite".
	Name string
	// ForUpdate is appended to a SELECT of a row that the transaction is
	// about to change: " FOR UPDATE" where rows are locked one by one,
	// "" where a write transaction holds the database's only write lock
	// (SQLite's BEGIN IMMEDIATE).
	ForUpdate string
	// ForKeyShare is appended to a SELECT of a row that must not be
	// deleted before the transaction ends (the lock a foreign key check
	// takes), or "".
	ForKeyShare string
	// Greatest names the scalar two-argument maximum ("max", "GREATEST").
	Greatest string
	// NoLimit is the LIMIT argument that means no limit (SQLite: -1,
	// PostgreSQL: NULL).
	NoLimit any
	// LockKeySQL takes a lock held until the transaction ends on (class
	// int32, key text), serializing writers of a key whose row may not
	// exist yet; "" where the write transaction already serializes every
	// writer.
	LockKeySQL string
	// InList returns a condition that is true when expr is one of the
	// values bound to a single parameter; ListArg makes that parameter
	// from a []string or []int64.
	InList  func(expr string) string
	ListArg func(values any) (any, error)
	// IntListRows returns a query of one column, named col, with a row
	// for each of the int64 values ListArg bound to a single parameter.
	IntListRows func(col string) string
	// EventDocFuncs: the database has the functions EventRoleFunc and
	// EventTextFunc (search_fold.go), which a fold then calls before the
	// SQL extraction of an event's document.
	EventDocFuncs bool
	// AuditChain returns the SQL expression of an audit event's hash (see
	// rowcodec.AuditHash) from SQL expressions of the previous hash (hex
	// text), the sequence number, the agent id and the payload (bytes).
	AuditChain func(prev, seq, agent, payload string) string
	// Contains returns the condition that the text expression holds the
	// term bound to the parameter term, ignoring case (the search's check
	// of a term on a document's body).
	Contains func(text, term string) string
	// SearchSetup, when not empty, is run first in a search's read
	// transaction (PostgreSQL: SET LOCAL jit = off, see
	// migrations/postgres/00037).
	SearchSetup string
	// Rank returns the expression of a search hit's score computed from
	// the text expression body and the parameter param (a value of
	// rankArg), or NULL where the database's own rank is to be used
	// (SQLite: a call of a function that calls RankScore, search_rank.go);
	// nil where the database has no such function.
	Rank func(body, param string) string
	// BytesColumn returns the expression that selects the text column col
	// as bytes, where the driver hands bytes over without a copy that text
	// would need (SQLite: CAST(col AS BLOB)); nil selects col as it is.
	BytesColumn func(col string) string
	// PollTurnsSQL returns the watched turns that are no longer running as
	// begun: cancelled, superseded, ended or removed. Its one parameter is
	// a JSON array of {"id": text, "gen": integer}; its columns are those
	// of pollRow.
	PollTurnsSQL string
}

// JSONInList is InList for databases with json_each (SQLite): the list is
// bound as a JSON array.
func JSONInList(expr string) string { return expr + ` IN (SELECT value FROM json_each(?))` }

// JSONIntListRows is IntListRows for databases with json_each (SQLite).
func JSONIntListRows(col string) string { return `SELECT value AS ` + col + ` FROM json_each(?)` }

// JSONListArg is ListArg for JSONInList.
func JSONListArg(values any) (any, error) {
	switch values.(type) {
	case []string, []int64:
	default:
		return nil, fmt.Errorf("sqlcore: list argument of type %T", values)
	}
	b, err := json.Marshal(values)
	return string(b), err
}

// Lock classes of Dialect.LockKeySQL: the first key of a two-key advisory
// lock, so that locks of different kinds never collide.
const (
	lockClassConversation int32 = 0x434F4E56 // "CONV": saves of one conversation id
	lockClassUploadBlob   int32 = 0x424C4F42 // "BLOB": writers of one (tenant, upload digest) and the collector
	lockClassSpendAgent   int32 = 0x5350454E // "SPEN": changes of one agent's spend limits
)

// statements are the facets' statements whose text depends on the
// dialect, spelled once per Store.
type statements struct {
	convVersion      string
	convLock         string
	convAppendGet    string
	rtCountLock      string
	rtGetLock        string
	rtTouch          string
	rtTurn           string
	rtKeyShare       string
	pageScopes       string
	auditHead        string
	auditSessionHead string
	spend            spendStatements
	events           eventStatements
	eventData        eventStatements // data alone (EventDataOnly)
}

func newStatements(d *Dialect) statements {
	return statements{
		convVersion:   convVersionSQL + d.ForUpdate,
		convLock:      convLockSQL + d.ForUpdate,
		convAppendGet: convAppendGetSQL + d.ForUpdate,
		rtCountLock:   rtCountSQL + d.ForUpdate,
		rtGetLock:     rtGetSQL + d.ForUpdate,
		rtTouch: `UPDATE runtime_sessions SET last_active_ms = ` + d.Greatest +
			`(last_active_ms, CAST(? AS BIGINT)) WHERE id = ? AND tenant = ?`,
		rtTurn:           rtTurnSQL + d.ForUpdate,
		rtKeyShare:       rtExistsSQL + d.ForKeyShare,
		pageScopes:       pageScopesSQL(d),
		auditHead:        auditHeadSQL(d),
		auditSessionHead: auditSessionHeadSQL(d),
		spend:            newSpendStatements(d),
		events:           newEventStatements(d, false),
		eventData:        newEventStatements(d, true),
	}
}

// limit is the LIMIT argument for n rows, 0 meaning no limit.
func (s *Store) limit(n int) any {
	if n <= 0 {
		return s.d.NoLimit
	}
	return int64(n)
}

// lockKey takes the dialect's transaction-scoped lock on (class, key), if
// it has one.
func (s *Store) lockKey(tx Tx, class int32, key string) error {
	if s.d.LockKeySQL == "" {
		return nil
	}
	_, err := tx.Exec(s.d.LockKeySQL, class, key)
	return err
}

// notifyTurns tells the backend's other stores, on commit, that a turn
// was cancelled, superseded or ended (a no-op without a notifier).
func (s *Store) notifyTurns(tx Tx) error {
	if s.cfg.NotifyTurns == nil {
		return nil
	}
	return s.cfg.NotifyTurns(tx)
}
