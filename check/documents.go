package check

// The documents check: every stored document of every facet is read back
// with the decoder the store uses (internal/rowcodec, encoding/json), one
// row at a time, and every row that does not decode is reported by its
// ids. The checks are listed per facet of the registry:
// TestEveryFacetHasDocumentChecks fails when a registered facet has no
// entry, so that a new facet cannot be forgotten here.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// RowSource is where the documents check reads rows: a connection to the
// store's database (SQLite or PostgreSQL), read-only.
type RowSource interface {
	// EachRow runs query, whose ncols columns are text or bytes, and
	// calls fn with each row's columns; fn's error ends the query and is
	// returned.
	EachRow(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error
}

// RowSourceFunc is a function that is a RowSource.
type RowSourceFunc func(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error

// EachRow calls f.
func (f RowSourceFunc) EachRow(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error {
	return f(ctx, query, ncols, fn)
}

// docCheck reads one kind of stored document: query returns a text id of
// the row first, then the columns decode reads (NULL columns are skipped
// by the query's WHERE).
type docCheck struct {
	table  string // the table the documents are in (owned by the facet)
	what   string // what a document is, for messages
	query  string
	decode func(cols [][]byte) error
	// sqliteOnly marks documents that are JSON text on SQLite and a typed
	// column (TEXT[]) on PostgreSQL, where they cannot be damaged JSON.
	sqliteOnly bool
	// needs, when set, is a table that must exist too: the query reads
	// columns a later migration added along with it.
	needs string
}

// decodeJSON returns a decoder that unmarshals the first column into a
// fresh value of v's type (the type the store decodes it into).
func decodeJSON[T any]() func(cols [][]byte) error {
	return func(cols [][]byte) error {
		var v T
		return json.Unmarshal(cols[0], &v)
	}
}

// validJSON is the decoder of documents the store keeps as JSON text and
// returns verbatim.
func validJSON(cols [][]byte) error {
	if !json.Valid(cols[0]) {
		return errors.New("invalid JSON")
	}
	return nil
}

// sealedOr accepts a value sealed by encryption at rest (package keys) as
// it is: only its session's data key opens and authenticates it, and the
// doctor holds no keys. Other values go to decode.
func sealedOr(decode func(cols [][]byte) error) func(cols [][]byte) error {
	return func(cols [][]byte) error {
		if keys.IsSealed(cols[0]) {
			return nil
		}
		return decode(cols)
	}
}

// documentChecks are the documents of each facet, in registry order.
var documentChecks = map[facet.Name][]docCheck{
	facet.Governance: {
		{table: "governed_sessions", what: "delegation chain", sqliteOnly: true,
			query: `SELECT id, delegation_chain FROM governed_sessions`, decode: decodeJSON[[]string]()},
		{table: "governed_sessions", what: "authorized tools", sqliteOnly: true,
			query: `SELECT id, authorized_tools FROM governed_sessions`, decode: decodeJSON[[]string]()},
		{table: "governed_sessions", what: "authorized credentials", sqliteOnly: true,
			query: `SELECT id, authorized_credentials FROM governed_sessions`, decode: decodeJSON[[]string]()},
		{table: "governed_use_requests", what: "request tools", sqliteOnly: true,
			query: `SELECT session_id || ' request ' || request_id, tools FROM governed_use_requests`, decode: decodeJSON[[]string]()},
		{table: "governed_use_requests", what: "recorded outcome",
			query: `SELECT session_id || ' request ' || request_id, outcome, detail FROM governed_use_requests`,
			decode: func(cols [][]byte) error {
				if string(cols[0]) == rowcodec.UseOutcomeOK {
					return validJSON(cols[1:])
				}
				_, err := rowcodec.DecodeUseOutcome(string(cols[0]), string(cols[1]))
				return err
			}},
		{table: "spend_reservations", what: "reservation holds",
			query:  `SELECT session_id || ' reservation ' || request_id, holds FROM spend_reservations`,
			decode: decodeJSON[[]json.RawMessage]()},
		{table: "spend_reservations", what: "reservation detail",
			query:  `SELECT session_id || ' reservation ' || request_id, detail FROM spend_reservations`,
			decode: validJSON},
	},
	facet.Runtime: {
		{table: "upload_blobs", what: "upload content",
			query: `SELECT u.session_id || ' upload ' || u.ref_id, b.sha256, b.content
				FROM upload_blobs AS b JOIN uploads AS u ON u.tenant = b.tenant AND u.sha256 = b.sha256`,
			decode: func(cols [][]byte) error {
				if keys.IsSealedBlob(cols[1]) {
					return nil // an encrypted session's upload (migration 20): keyed by an HMAC, not its digest
				}
				if sum := sha256.Sum256(cols[1]); !bytes.Equal(sum[:], cols[0]) {
					return errors.New("content does not match its SHA-256")
				}
				return nil
			}},
	},
	facet.Conversations: {
		// The session data of an encrypted conversation is sealed
		// (migration 24): the doctor has no keys and takes it as it is.
		{table: "conversations", what: "queue config", query: `SELECT id, queue_config FROM conversations WHERE queue_config IS NOT NULL`, decode: sealedOr(validJSON)},
		{table: "conversations", what: "confirmation policy", query: `SELECT id, confirmation_policy FROM conversations WHERE confirmation_policy IS NOT NULL`, decode: sealedOr(validJSON)},
		{table: "conversations", what: "permission policy", query: `SELECT id, permission_policy FROM conversations WHERE permission_policy IS NOT NULL`, decode: sealedOr(validJSON)},
		{table: "conversations", what: "security config", query: `SELECT id, security_config FROM conversations WHERE security_config IS NOT NULL`, decode: sealedOr(validJSON)},
		{table: "conversations", what: "tool names", query: `SELECT id, tool_names FROM conversations`, decode: decodeJSON[[]string]()},
		{table: "conversations", what: "tasks", query: `SELECT id, tasks FROM conversations`, decode: sealedOr(decodeJSON[[]store.Task]())},
		{table: "conversations", what: "LLM config", query: `SELECT id, llm_config FROM conversations WHERE llm_config IS NOT NULL`, decode: decodeJSON[store.LLMConfig]()},
		// Lineage of conversations (migration 15): a fork reads the
		// messages below its fork point from the conversation or retired
		// history it names.
		{table: "conversations", what: "lineage", needs: "conversation_retired",
			query: `SELECT c.id, CASE WHEN p.id IS NULL AND r.id IS NULL THEN 'missing' ELSE 'present' END
				FROM conversations AS c LEFT JOIN conversations AS p ON p.id = c.lineage_parent
				LEFT JOIN conversation_retired AS r ON r.id = c.lineage_parent
				WHERE c.lineage_parent IS NOT NULL`,
			decode: func(cols [][]byte) error {
				if string(cols[0]) == "missing" {
					return errors.New("the history it was forked from is missing: the messages up to its fork point are gone")
				}
				return nil
			}},
		{table: "conversation_messages", what: "message",
			query:  `SELECT session_id || ' message ' || CAST(seq AS TEXT), content FROM conversation_messages`,
			decode: sealedOr(func(cols [][]byte) error { _, err := rowcodec.DecodeContent(cols[0]); return err })},
		{table: "conversation_trace_events", what: "trace event",
			query:  `SELECT session_id || ' trace ' || CAST(seq AS TEXT), event FROM conversation_trace_events`,
			decode: sealedOr(func(cols [][]byte) error { _, err := rowcodec.DecodeTraceEvent(cols[0]); return err })},
		{table: "conversation_runs", what: "run snapshot",
			query:  `SELECT session_id || ' run ' || run_id, snapshot FROM conversation_runs`,
			decode: sealedOr(func(cols [][]byte) error { _, err := rowcodec.DecodeRunSnapshot(cols[0]); return err })},
		{table: "conversation_run_events", what: "run event",
			query:  `SELECT session_id || ' run ' || run_id || ' event ' || CAST(seq AS TEXT), event FROM conversation_run_events`,
			decode: sealedOr(validJSON)},
		{table: "conversation_reports", what: "verification report",
			query:  `SELECT session_id || ' report ' || CAST(seq AS TEXT), report FROM conversation_reports`,
			decode: sealedOr(func(cols [][]byte) error { _, err := rowcodec.DecodeVerificationReport(cols[0]); return err })},
	},
	facet.AgentSessions: {
		{table: "agent_events", what: "event",
			query: `SELECT s.app || '/' || s.user_id || '/' || s.session_id || ' event ' || CAST(e.seq AS TEXT), e.data
				FROM agent_events AS e JOIN agent_sessions AS s ON s.pk = e.session_pk`,
			decode: sealedOr(validJSON)},
		{table: "agent_app_state", what: "app state value",
			query: `SELECT app || ' key ' || key, value FROM agent_app_state`, decode: validJSON},
		{table: "agent_user_state", what: "user state value",
			query: `SELECT app || '/' || user_id || ' key ' || key, value FROM agent_user_state`, decode: validJSON},
		{table: "agent_session_state", what: "session state value",
			query: `SELECT s.app || '/' || s.user_id || '/' || s.session_id || ' key ' || t.key, t.value
				FROM agent_session_state AS t JOIN agent_sessions AS s ON s.pk = t.session_pk`,
			decode: sealedOr(validJSON)},
		// Lineage (migration 12): a fork reads the events up to its fork
		// point from the row it names; that row must be there.
		{table: "agent_sessions", what: "lineage", needs: "agent_state_log",
			query: `SELECT s.app || '/' || s.user_id || '/' || s.session_id || ' row ' || CAST(s.pk AS TEXT),
				CASE WHEN p.pk IS NULL THEN 'missing' ELSE 'present' END
				FROM agent_sessions AS s LEFT JOIN agent_sessions AS p ON p.pk = s.lineage_parent
				WHERE s.lineage_parent IS NOT NULL`,
			decode: func(cols [][]byte) error {
				if string(cols[0]) == "missing" {
					return errors.New("the row it was forked from is missing: the events up to its fork point are gone")
				}
				return nil
			}},
		{table: "agent_sessions", what: "initial session state", needs: "agent_state_log",
			query: `SELECT app || '/' || user_id || '/' || session_id || ' row ' || CAST(pk AS TEXT), initial_state
				FROM agent_sessions`,
			decode: sealedOr(decodeJSON[map[string]json.RawMessage]())},
		// Since migration 40 a key's current value is its head in the
		// log, at the largest position (before, agent_session_state's).
		{table: "agent_state_log", what: "logged session state value",
			query: `SELECT s.app || '/' || s.user_id || '/' || s.session_id || ' key ' || t.key || ' at ' || CAST(t.seq AS TEXT), t.value
				FROM agent_state_log AS t JOIN agent_sessions AS s ON s.pk = t.session_pk
				WHERE t.seq < ` + sqlcore.StateHead,
			decode: sealedOr(validJSON)},
		{table: "agent_state_log", what: "session state value",
			query: `SELECT s.app || '/' || s.user_id || '/' || s.session_id || ' key ' || t.key, t.value
				FROM agent_state_log AS t JOIN agent_sessions AS s ON s.pk = t.session_pk
				WHERE t.seq = ` + sqlcore.StateHead,
			decode: sealedOr(validJSON)},
	},
	facet.Audit: {
		// The detail is hashed as stored: audit verify finds an edited
		// one; this finds one that is not JSON.
		{table: "audit_events", what: "audit detail",
			query:  `SELECT agent_id || ' event ' || CAST(seq AS TEXT), detail FROM audit_events`,
			decode: validJSON},
	},
}

// maxReportedDocs bounds the damaged documents a report names.
const maxReportedDocs = 10

// DocumentReport is the outcome of the documents check.
type DocumentReport struct {
	Checked int64 `json:"checked"`
	Damaged int64 `json:"damaged"`
	// First names the first damaged documents, at most ten: "table ids
	// (what): why", as "conversation_messages c1 message 3 (message):
	// ...".
	First []string `json:"first"`
}

// Documents decodes every stored document of every facet whose table is
// among tables, streaming the rows of src. typedLists is true on a
// backend that keeps lists in typed columns (PostgreSQL's TEXT[]), where
// they cannot be damaged JSON. An error is a failure to read, not a
// damaged document.
func Documents(ctx context.Context, src RowSource, tables []string, typedLists bool) (DocumentReport, error) {
	var r DocumentReport
	for _, f := range facet.All() {
		for _, c := range documentChecks[f.Name] {
			if (c.sqliteOnly && typedLists) || !slices.Contains(tables, c.table) || (c.needs != "" && !slices.Contains(tables, c.needs)) {
				continue
			}
			ncols := strings.Count(strings.SplitN(c.query, " FROM ", 2)[0], ",") + 1
			err := src.EachRow(ctx, c.query, ncols, func(cols [][]byte) error {
				r.Checked++
				if err := c.decode(cols[1:]); err != nil {
					r.Damaged++
					if len(r.First) < maxReportedDocs {
						r.First = append(r.First, fmt.Sprintf("%s %s (%s): %v", c.table, humanize.Escape(string(cols[0])), c.what, err))
					}
				}
				return nil
			})
			if err != nil {
				return r, fmt.Errorf("read %s: %w", c.table, err)
			}
		}
	}
	return r, nil
}

// Documents adds the "documents" result of the documents check (see
// Documents) and reports whether every document decodes.
func (r *Report) Documents(ctx context.Context, src RowSource, tables []string, typedLists bool) bool {
	d, err := Documents(ctx, src, tables, typedLists)
	switch {
	case err != nil:
		r.Add("documents", Fail, "%v", err)
		return false
	case d.Damaged > 0:
		more := ""
		if d.Damaged > int64(len(d.First)) {
			more = fmt.Sprintf("; %d more", d.Damaged-int64(len(d.First)))
		}
		r.Add("documents", Fail, "%d of %d stored documents do not decode: %s%s", d.Damaged, d.Checked,
			strings.Join(d.First, "; "), more)
		return false
	}
	r.Add("documents", OK, "%d stored documents decode", d.Checked)
	return true
}

// DamagedError is the error of a database found damaged before a rewrite
// (sqlstore.CheckIntact, pgstore.CheckIntact): Why says what was found. It
// matches store.ErrCorrupt.
type DamagedError struct {
	Why string
}

func (e *DamagedError) Error() string { return "the database is damaged: " + e.Why }

// Unwrap makes a DamagedError match store.ErrCorrupt.
func (e *DamagedError) Unwrap() error { return store.ErrCorrupt }

// DamagedDocuments returns a *DamagedError when d found damaged
// documents, else nil.
func DamagedDocuments(d DocumentReport) error {
	if d.Damaged == 0 {
		return nil
	}
	return &DamagedError{Why: fmt.Sprintf("%d stored %s do not decode, the first: %s",
		d.Damaged, humanize.Plural(d.Damaged, "document", "documents"), d.First[0])}
}
