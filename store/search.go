package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Searcher finds stored items by what was said in them, and reads a user's
// events across all of their sessions in one query.
//
// The index it reads is derived from the content after the content's
// commit: every write and delete of searchable content, on every path
// (retention, rewinds and imports included), queues the item's key in its
// own transaction (triggers on the content tables), and the store folds
// the queue into the index in batches, in transactions of its own (a
// background indexer, one at a time across the processes sharing the
// database). The queue is the position up to which the content is
// indexed, kept transactionally: nothing is indexed twice or skipped, and
// a crash leaves the queue for the next store to fold. Search, History,
// CheckSearchIndex and Reindex fold what was queued before the call
// first, so they find every item acknowledged before it and none deleted
// before it. A store that cannot fold (read-only, or a read under
// ReadSnapshot) reads the index without the documents of the items not
// yet folded and matches those items directly from their content, the
// same way, so its answers are exact too; only when more than a fold
// batch of them waits does it leave them out (SearchResult.Pending). The
// backends' WithSearchIndex(false) turns the index off for the whole
// database: writes then pay nothing for search, and these methods return
// ErrSearchDisabled.
//
// Matching: a query is split into terms at white space; an item matches
// when every term occurs in its text as a substring, ignoring case. The
// index is a trigram index (SQLite: FTS5's trigram tokenizer; PostgreSQL:
// a GIN index over the text's trigrams), which finds a term wherever it
// occurs, also inside CJK text that has no spaces between words. A term
// of fewer than three characters has no trigram: when the query has a
// longer term as well, the index finds the candidates and the short terms
// are checked on their text; when every term is short, the newest
// SearchQuery.ScanLimit items that pass the filters are scanned instead
// and SearchResult.Partial says whether older items were left out — a
// short query never silently finds nothing.
//
// What an item's text is: a message's text and reasoning blocks, tool
// names, tool input JSON and tool results; an agent event's
// content.parts (text, functionCall name and args, functionResponse
// name); a trace event's kind and name; an artifact's URI, id and tool
// name; a run's id.
type Searcher interface {
	// Search returns a page of the items that match q, best first (or
	// newest first), each with a snippet and, if asked, a window of the
	// items around it.
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)
	// History returns a page of a user's agent events across all of the
	// user's sessions, newest first, in one query.
	History(ctx context.Context, req HistoryRequest) (Page[HistoryItem], error)
	// CheckSearchIndex compares the index with the content.
	CheckSearchIndex(ctx context.Context) (SearchIndexReport, error)
	// Reindex rebuilds the index from the content in batches of short
	// write transactions, while the store stays in use.
	Reindex(ctx context.Context, req ReindexRequest) (ReindexResult, error)
}

// SearchKind is the kind of a searchable item.
type SearchKind string

// The kinds of searchable items.
const (
	SearchMessage  SearchKind = "message"
	SearchEvent    SearchKind = "event"
	SearchTrace    SearchKind = "trace"
	SearchArtifact SearchKind = "artifact"
	SearchRun      SearchKind = "run"
)

// SearchKinds returns every kind of searchable item.
func SearchKinds() []SearchKind {
	return []SearchKind{SearchMessage, SearchEvent, SearchTrace, SearchArtifact, SearchRun}
}

// SearchOrder orders search hits.
type SearchOrder string

// The orders of search hits.
const (
	// SearchByRank orders by relevance, best first (SQLite: bm25;
	// PostgreSQL: ts_rank), then newest first. Pages of a rank order are
	// exact while the index does not change; under concurrent writes a
	// rank may move (it depends on the whole index), so use SearchByTime
	// to page through a changing store.
	SearchByRank SearchOrder = "rank"
	// SearchByTime orders newest first.
	SearchByTime SearchOrder = "time"
)

// Search limits.
const (
	// DefaultSearchLimit is the page size when SearchQuery.Limit is 0.
	DefaultSearchLimit = 20
	// MaxSearchLimit is the largest page size.
	MaxSearchLimit = 100
	// MaxSearchWindow is the largest SearchQuery.Window.
	MaxSearchWindow = 20
	// MaxSearchQuery is the longest query in bytes.
	MaxSearchQuery = 1024
	// DefaultScanLimit is the number of newest items a query of short
	// terms only scans when SearchQuery.ScanLimit is 0.
	DefaultScanLimit = 200000
	// MinIndexedTerm is the shortest term, in characters, the index can
	// find: shorter ones are checked on the text (see Searcher).
	MinIndexedTerm = 3
)

// SearchQuery selects search hits. Zero fields do not filter.
type SearchQuery struct {
	// Query holds the terms, separated by white space. Required.
	Query string
	// Kinds keeps hits of these kinds only.
	Kinds []SearchKind
	// Facet keeps the hits of one facet: "conversations" (messages,
	// traces, artifacts, runs) or "agent_sessions" (events).
	Facet string
	// App and User keep the events of agent sessions of that application
	// (and user).
	App, User string
	// Session keeps the hits of one conversation or agent session id.
	Session string
	// Since and Until keep items of times in [Since, Until).
	Since, Until time.Time
	// Order is SearchByRank (the default) or SearchByTime.
	Order SearchOrder
	// Limit is the page size: 0 means DefaultSearchLimit, at most
	// MaxSearchLimit.
	Limit int
	// Cursor resumes after the last hit of a previous page (its Next),
	// asked with the same query and filters.
	Cursor string
	// Window, when positive, returns with each message or event hit the
	// Window items before and after it in its conversation or session.
	Window int
	// ScanLimit bounds the scan of a query whose terms are all shorter
	// than MinIndexedTerm: 0 means DefaultScanLimit.
	ScanLimit int
	// IncludeEvents returns with each event hit the stored event
	// (SearchHit.Event), read in the same query: a memory service needs
	// no read per hit.
	IncludeEvents bool
}

// SearchTerms returns the terms of a query: its white-space separated
// words, without repeats.
func SearchTerms(query string) []string {
	var out []string
	for _, t := range strings.Fields(query) {
		dup := false
		for _, o := range out {
			if strings.EqualFold(o, t) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// Normalize validates q and fills in defaults.
func (q SearchQuery) Normalize() (SearchQuery, error) {
	if len(q.Query) > MaxSearchQuery {
		return q, Invalid("query", "too long")
	}
	if !utf8.ValidString(q.Query) || strings.ContainsRune(q.Query, 0) {
		return q, Invalid("query", "not valid UTF-8 text")
	}
	if len(SearchTerms(q.Query)) == 0 {
		return q, Invalid("query", "empty")
	}
	for _, k := range q.Kinds {
		if !validKind(k) {
			return q, Invalid("kinds", "unknown kind")
		}
	}
	switch q.Facet {
	case "", "conversations", "agent_sessions":
	default:
		return q, Invalid("facet", "not a searchable facet (conversations, agent_sessions)")
	}
	for _, f := range []struct{ name, v string }{{"app", q.App}, {"user", q.User}, {"session", q.Session}} {
		if f.v != "" {
			if err := ValidateID(f.name, f.v); err != nil {
				return q, err
			}
		}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, Invalid("until", "not after since")
	}
	switch q.Order {
	case "":
		q.Order = SearchByRank
	case SearchByRank, SearchByTime:
	default:
		return q, Invalid("order", "not rank or time")
	}
	if q.Window < 0 || q.Window > MaxSearchWindow {
		return q, Invalid("window", "out of range")
	}
	if q.ScanLimit < 0 {
		return q, Invalid("scan_limit", "negative")
	}
	if q.ScanLimit == 0 {
		q.ScanLimit = DefaultScanLimit
	}
	if q.Limit < 0 || q.Limit > MaxSearchLimit {
		return q, Invalid("limit", "out of range")
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Cursor != "" {
		c, err := DecodeSearchCursor(q.Cursor)
		if err != nil {
			return q, err
		}
		if c.Order != q.Order {
			return q, Invalid("cursor", "not a cursor of this order")
		}
	}
	return q, nil
}

func validKind(k SearchKind) bool {
	for _, v := range SearchKinds() {
		if k == v {
			return true
		}
	}
	return false
}

// SearchCursor is the position a search page resumes after.
type SearchCursor struct {
	Order SearchOrder `json:"o"`
	// Score of the last hit (SearchByRank).
	Score float64 `json:"s,omitempty"`
	// AtMicros of the last hit (SearchByTime).
	AtMicros int64 `json:"t,omitempty"`
	// Doc is the index row of the last hit.
	Doc int64 `json:"d"`
}

// Encode returns the cursor as an opaque string.
func (c SearchCursor) Encode() string {
	b, _ := json.Marshal(c) // numbers and a string always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeSearchCursor parses a cursor made by SearchCursor.Encode.
func DecodeSearchCursor(s string) (SearchCursor, error) {
	var c SearchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(s) > 256 || json.Unmarshal(b, &c) != nil || c.Doc <= 0 ||
		(c.Order != SearchByRank && c.Order != SearchByTime) {
		return SearchCursor{}, Invalid("cursor", "not a cursor of this search")
	}
	return c, nil
}

// SearchResult is a page of search hits.
type SearchResult struct {
	Hits []SearchHit `json:"hits"`
	// Next resumes after the last hit; empty on the last page.
	Next string `json:"next,omitempty"`
	// Scanned is true when every term was shorter than MinIndexedTerm and
	// the newest items were scanned instead of the index.
	Scanned bool `json:"scanned,omitempty"`
	// Partial is true when such a scan stopped at SearchQuery.ScanLimit
	// items: older items were not examined.
	Partial bool `json:"partial,omitempty"`
	// Pending is the number of items written, changed or deleted since
	// the index was last folded that this search left out: a store that
	// cannot fold first (a read-only store, a snapshot) matches such
	// items directly from their content, exactly, while at most a fold
	// batch of them waits (then Pending is 0); beyond that it leaves
	// them out. Their stale documents are left out too (a deleted or
	// changed item is never returned from its old text), and their new
	// text is not found until a store that can write folds them (the
	// application's store, or sessionctl reindex): the answer is not
	// exact while Pending > 0.
	Pending int `json:"pending,omitempty"`
}

// PendingNote is the sentence that tells a person about
// SearchResult.Pending n (the console, sessionctl); empty when n is 0.
func PendingNote(n int) string {
	if n <= 0 {
		return ""
	}
	what := fmt.Sprintf("%d recent changes are", n)
	if n == 1 {
		what = "1 recent change is"
	}
	return what + " not indexed yet: items written since are not found (and deleted or changed ones are left out) until a store that can write folds them (the application, or sessionctl reindex); this answer is not exact"
}

// SearchHit is one item that matched.
type SearchHit struct {
	Kind SearchKind `json:"kind"`
	// SessionID is the conversation id, or the agent session's id.
	SessionID string `json:"session_id"`
	// App and User are set for agent events.
	App  string `json:"app,omitempty"`
	User string `json:"user,omitempty"`
	// Seq is the position of a message, event or trace event in its
	// conversation or session.
	Seq int64 `json:"seq"`
	// Ref is an artifact's URI or a run's id.
	Ref string `json:"ref,omitempty"`
	// Role is a message's role, an event's author, a trace's kind, an
	// artifact's tool or a run's status.
	Role  string    `json:"role,omitempty"`
	At    time.Time `json:"at"`
	Score float64   `json:"score"`
	// Snippet is the part of the item's text around its first match.
	Snippet Snippet `json:"snippet"`
	// Event is the stored event of an event hit, when
	// SearchQuery.IncludeEvents asked for it.
	Event *AgentEvent `json:"event,omitempty"`
	// Window holds the items around a message or event hit, in order,
	// the hit included, when SearchQuery.Window asked for it.
	Window []SearchItem `json:"window,omitempty"`
}

// SearchItem is an item of a hit's window.
type SearchItem struct {
	Seq  int64     `json:"seq"`
	Role string    `json:"role,omitempty"`
	At   time.Time `json:"at"`
	// Text is the item's indexed text, cut to MaxWindowText bytes.
	Text string `json:"text"`
}

// MaxWindowText is the longest text of a window item, in bytes.
const MaxWindowText = 1024

// History requests.
const (
	// DefaultHistoryLimit is the page size when HistoryRequest.Limit is 0.
	DefaultHistoryLimit = 100
	// MaxHistoryLimit is the largest page size.
	MaxHistoryLimit = 1000
)

// HistoryRequest selects a user's agent events across all of the user's
// sessions of one application.
type HistoryRequest struct {
	App, User string
	// Roles keeps events of these authors (ADK's author; else the
	// content's role).
	Roles []string
	// Since and Until keep events with timestamps in [Since, Until).
	Since, Until time.Time
	// Limit is the page size: 0 means DefaultHistoryLimit.
	Limit int
	// Cursor resumes after the last item of a previous page.
	Cursor string
}

// Normalize validates r and fills in defaults.
func (r HistoryRequest) Normalize() (HistoryRequest, error) {
	if err := ValidateID("app", r.App); err != nil {
		return r, err
	}
	if err := ValidateID("user", r.User); err != nil {
		return r, err
	}
	for _, role := range r.Roles {
		if len(role) > MaxIDLength || !utf8.ValidString(role) {
			return r, Invalid("roles", "not a role")
		}
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Until.After(r.Since) {
		return r, Invalid("until", "not after since")
	}
	if r.Limit < 0 || r.Limit > MaxHistoryLimit {
		return r, Invalid("limit", "out of range")
	}
	if r.Limit == 0 {
		r.Limit = DefaultHistoryLimit
	}
	if r.Cursor != "" {
		c, err := DecodeSearchCursor(r.Cursor)
		if err != nil || c.Order != SearchByTime {
			return r, Invalid("cursor", "not a cursor of this history")
		}
	}
	return r, nil
}

// HistoryItem is one event of a user's history.
type HistoryItem struct {
	// Key names the session the event belongs to.
	Key SessionKey `json:"key"`
	// Role is the event's author (else its content's role).
	Role  string     `json:"role,omitempty"`
	Event AgentEvent `json:"event"`
}

// SearchIndexReport compares the search index with the content.
type SearchIndexReport struct {
	// Kinds holds one line per kind of item.
	Kinds []SearchIndexKind `json:"kinds"`
	// IndexOK is false when the full-text index disagrees with the index
	// rows (SQLite's FTS5 integrity check); PostgreSQL's index is part of
	// the table and always agrees.
	IndexOK bool `json:"index_ok"`
	// IndexDetail says why IndexOK is false.
	IndexDetail string `json:"index_detail,omitempty"`
}

// SearchIndexKind compares the index rows of one kind with its content.
type SearchIndexKind struct {
	Kind SearchKind `json:"kind"`
	// Items and Indexed count the content rows and the index rows.
	Items   int64 `json:"items"`
	Indexed int64 `json:"indexed"`
	// Missing counts content rows without an index row; Orphans index
	// rows without their content; Stale index rows whose text differs
	// from the text of their content.
	Missing int64 `json:"missing"`
	Orphans int64 `json:"orphans"`
	Stale   int64 `json:"stale"`
}

// OK reports whether the index agrees with the content.
func (r SearchIndexReport) OK() bool {
	if !r.IndexOK {
		return false
	}
	for _, k := range r.Kinds {
		if k.Missing != 0 || k.Orphans != 0 || k.Stale != 0 || k.Items != k.Indexed {
			return false
		}
	}
	return true
}

// ReindexRequest asks for a rebuild of the search index.
type ReindexRequest struct {
	// Batch is the number of items per write transaction: 0 means 1000.
	Batch int
	// Progress, when set, is called after each batch with the items done.
	Progress func(done int64)
}

// ReindexResult says what a reindex did.
type ReindexResult struct {
	// Items is the number of content rows indexed again.
	Items int64 `json:"items"`
	// Orphans is the number of index rows removed that had no content.
	Orphans int64 `json:"orphans"`
	// Batches is the number of write transactions.
	Batches int64 `json:"batches"`
}
