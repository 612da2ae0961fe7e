package sqlstore

import (
	"database/sql/driver"

	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/internal/sqlcore"

	"github.com/agentstore/sessionstore/store"
)

// containsFunc is the SQL function with which a search keeps the documents
// that hold a term (migration 32): the trigram index finds those holding
// all of its trigrams, anywhere; this checks the term itself, ignoring
// case as the snippet's highlighting does (store.ContainsFold), in any
// script (SQLite's lower() folds ASCII only).
const containsFunc = "sessionstore_contains"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(containsFunc, 2, searchContains)
	sqlite.MustRegisterDeterministicScalarFunction(rankFunc, 2, searchRank)
}

// rankFunc is the SQL function that scores a search hit as
// -bm25(search_fts) does, from the index's statistics passed by the
// search, without FTS5's second reading of the body (sqlcore.RankScore).
const rankFunc = "sessionstore_rank"

// rankSQL is the dialect's Rank: a call of rankFunc.
func rankSQL(body, param string) string {
	return rankFunc + "(" + body + ", " + param + ")"
}

// searchRank is sessionstore_rank(body, param): the score of a document
// of text body for the search of param; NULL when sqlcore.RankScore
// leaves the document to bm25().
func searchRank(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	body, ok1 := textArg(args[0])
	param, ok2 := textArg(args[1])
	if !ok1 || !ok2 {
		return nil, nil
	}
	if v, ok := sqlcore.RankScore(body, param); ok {
		return v, nil
	}
	return nil, nil
}

// containsSQL is the dialect's Contains: a call of containsFunc.
func containsSQL(text, term string) string {
	return containsFunc + "(" + text + ", " + term + ")"
}

// searchContains is sessionstore_contains(text, term): 1 when term occurs
// in text ignoring case, else 0; NULL when either is NULL.
func searchContains(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	text, ok1 := textArg(args[0])
	term, ok2 := textArg(args[1])
	if !ok1 || !ok2 {
		return nil, nil
	}
	if store.ContainsFold(text, term) {
		return int64(1), nil
	}
	return int64(0), nil
}

func textArg(v driver.Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}
