package sqlcore

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// Search of encrypted content (an opt-in: Config.SearchEncrypted).
//
// The index (folded in after the commit from the keys the content
// triggers queue, migration 27 and search_fold.go) sees only what a row
// stores, and skips sealed values: by default an encrypted session's
// content is never indexed. With the opt-in, the write paths that seal a value
// write its search document themselves, from the plaintext they hold, in
// the same transaction: the same columns the trigger would write, the
// body built in Go the way the trigger builds it in SQL. The index then
// holds plaintext terms of encrypted sessions (search_docs.body and the
// full-text index), so a byte scan of the database finds them; that is
// what the opt-in trades for search. The documents go with their rows:
// deleting an event or a session (which queues its key for shredding)
// deletes its documents through the delete triggers.
//
// The mechanism is generic: indexSealedEvent for agent events (called by
// the append and restore paths) and indexSealedMessage for conversation
// messages (called by every path that inserts a message row: Append and
// so Compact's summary record, Save, and restore). A fork copies no
// rows (it reads its parent's), and a rewind, a trim or a delete moves
// or deletes message rows, whose delete trigger deletes their documents
// whether the row was sealed or not: the opt-in's documents follow the
// same rows the triggers' documents follow for a plaintext conversation.
// A hit's snippet and window are cut from the document's body, the
// plaintext text the write path indexed, never from the sealed value.

// sealedRows is, per kind of search item, the condition on content row c
// of an encrypted session (whose sealed values the index triggers skip):
// CheckSearchIndex counts such a row as an item only when it has a
// document (the opt-in wrote one), and never as missing. The conditions
// use the sessions' data_key indexes, not the content.
var sealedRows = map[store.SearchKind]string{
	store.SearchMessage: `c.session_id IN (SELECT id FROM conversations WHERE data_key <> '')`,
	store.SearchEvent:   `c.session_pk IN (SELECT pk FROM agent_sessions WHERE data_key <> '')`,
}

const (
	// The documents name their session's tenant themselves: a reindex
	// writes them outside any tenant's transaction, where PostgreSQL's
	// column default (the transaction's tenant) would be the default
	// tenant.
	searchEventDocSQL = `INSERT INTO search_docs (kind, session_pk, pos, session_id, app, user_id, role, at_us, body, tenant)
		SELECT 'event', ?, ?, s.session_id, s.app, s.user_id, ?, ?, ?, s.tenant FROM agent_sessions AS s WHERE s.pk = ?`
	searchMessageDocSQL = `INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body, tenant)
		SELECT 'message', ?, ?, ?, ?, ?, ?, c.tenant FROM conversations AS c WHERE c.id = ?`
)

// indexSealedEvent writes the search document of an event sealed with dk
// from its plaintext data, when the store opts in (a no-op otherwise, and
// for a plaintext event, which the trigger indexes).
func (s *Store) indexSealedEvent(tx Tx, dk *keys.DataKey, pk, seq, tsUS int64, data []byte) error {
	if dk == nil {
		return nil
	}
	if err := dropStaleDoc(tx, "event", pk, "", seq); err != nil {
		return err
	}
	if !s.cfg.SearchEncrypted {
		return nil
	}
	role, body := eventSearchText(data)
	_, err := tx.Exec(searchEventDocSQL, pk, seq, role, tsUS, body, pk)
	return err
}

// indexSealedMessage writes the search document of a conversation
// message sealed with dk from its plaintext content (see
// indexSealedEvent).
func (s *Store) indexSealedMessage(tx Tx, dk *keys.DataKey, sessionID string, seq int64, role string, createdMS int64, content []byte) error {
	if dk == nil {
		return nil
	}
	if err := dropStaleDoc(tx, "message", 0, sessionID, seq); err != nil {
		return err
	}
	if !s.cfg.SearchEncrypted {
		return nil
	}
	_, err := tx.Exec(searchMessageDocSQL, sessionID, seq, sessionID, role, createdMS*1000, messageSearchText(content), sessionID)
	return err
}

// dropStaleDoc deletes the document at a key that sealed content is being
// written to: one left by content deleted before whose deletion is not
// folded in yet (search_fold.go), which a fold would not remove once the
// key holds sealed content. Usually there is none (an index probe).
func dropStaleDoc(tx Tx, kind string, pk int64, owner string, seq int64) error {
	_, err := tx.Exec(`DELETE FROM search_docs WHERE kind = ? AND session_pk = ? AND owner = ? AND pos = ? AND ref = ''`, kind, pk, owner, seq)
	return err
}

// jsonText is a JSON value as the index's SQL reads it with
// json_extract: a string's text, another value's compact JSON, "" for
// null or absent.
func jsonText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if v[0] == '"' {
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return ""
	}
	return b.String()
}

// joinNonEmpty joins the non-empty parts with one space.
func joinNonEmpty(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// eventSearchText returns the role and the indexed text of an ADK event:
// its author (else its content's role), and the text, function call name
// and arguments and function response name of each of its parts.
func eventSearchText(data []byte) (role, body string) {
	var ev struct {
		Author  json.RawMessage `json:"author"`
		Content struct {
			Role  json.RawMessage   `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"content"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return "", ""
	}
	role = jsonText(ev.Author)
	if role == "" {
		role = jsonText(ev.Content.Role)
	}
	var texts []string
	for _, raw := range ev.Content.Parts {
		var p struct {
			Text         json.RawMessage `json:"text"`
			FunctionCall *struct {
				Name json.RawMessage `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				Name json.RawMessage `json:"name"`
			} `json:"functionResponse"`
		}
		if json.Unmarshal(raw, &p) != nil {
			continue // not an object
		}
		parts := []string{jsonText(p.Text)}
		if p.FunctionCall != nil {
			parts = append(parts, jsonText(p.FunctionCall.Name), jsonText(p.FunctionCall.Args))
		}
		if p.FunctionResponse != nil {
			parts = append(parts, jsonText(p.FunctionResponse.Name))
		}
		if t := joinNonEmpty(parts...); t != "" {
			texts = append(texts, t)
		}
	}
	return role, strings.Join(texts, " ")
}

// messageSearchText returns the indexed text of a conversation message's
// content blocks: each block's text, name and input, and its content (a
// string, or the texts of an array of blocks).
func messageSearchText(content []byte) string {
	var blocks []json.RawMessage
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, raw := range blocks {
		var b struct {
			Text    json.RawMessage `json:"text"`
			Name    json.RawMessage `json:"name"`
			Input   json.RawMessage `json:"input"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		parts := []string{jsonText(b.Text), jsonText(b.Name), jsonText(b.Input)}
		c := bytes.TrimSpace(b.Content)
		switch {
		case len(c) > 0 && c[0] == '"':
			parts = append(parts, jsonText(c))
		case len(c) > 0 && c[0] == '[':
			var inner []json.RawMessage
			if json.Unmarshal(c, &inner) == nil {
				var ts []string
				for _, r := range inner {
					var x struct {
						Text json.RawMessage `json:"text"`
					}
					if json.Unmarshal(r, &x) == nil {
						if t := jsonText(x.Text); t != "" {
							ts = append(ts, t)
						}
					}
				}
				parts = append(parts, strings.Join(ts, " "))
			}
		}
		if t := joinNonEmpty(parts...); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, " ")
}

// openSealedEvent opens ev's data in place when it is sealed (an event of
// an encrypted session that the opt-in indexed), with the data key of the
// agent_sessions row pk; r nil reads outside a transaction.
func (s *Store) openSealedEvent(ctx context.Context, r Tx, pk int64, ev *store.AgentEvent) error {
	if !keys.IsSealed(ev.Data) {
		return nil
	}
	var kid string
	var err error
	if r != nil {
		err = r.Scan(keyOfPKSQL, []any{pk}, &kid)
	} else {
		err = s.db.Scan(ctx, keyOfPKSQL, []any{pk}, &kid)
	}
	if err != nil {
		return err
	}
	dk, err := s.dataKey(ctx, kid)
	if err != nil {
		return err
	}
	if dk == nil {
		return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
	}
	evs := []store.AgentEvent{*ev}
	if err := openEvents(dk, evs); err != nil {
		return err
	}
	*ev = evs[0]
	return nil
}

// sealedUnindexedSQL selects a batch of sealed events without a search
// document.
const sealedUnindexedSQL = `SELECT e.session_pk, e.seq, e.event_id, e.ts_us, e.data FROM agent_events AS e
	WHERE substr(e.data, 1, 7) = 'ssenc1:' AND NOT EXISTS (SELECT 1 FROM search_docs AS d
		WHERE d.kind = 'event' AND d.session_pk = e.session_pk AND d.owner = '' AND d.pos = e.seq AND d.ref = '')
	ORDER BY e.session_pk, e.seq LIMIT ?`

// reindexSealedEvents writes the search documents of sealed events that
// have none, in batches, when the store opts in (Reindex).
func (s *Store) reindexSealedEvents(ctx context.Context, batch int, res *store.ReindexResult) error {
	if !s.cfg.SearchEncrypted || s.cfg.Keys == nil {
		return nil
	}
	type ev struct {
		pk, seq, ts int64
		e           store.AgentEvent
	}
	return s.reindexBatches(ctx, res, func(tx Tx) (int64, error) {
		var evs []ev
		if err := tx.Query(sealedUnindexedSQL, []any{batch}, func(r Rows) error {
			var x ev
			var data []byte
			if err := r.Scan(&x.pk, &x.seq, &x.e.ID, &x.ts, &data); err != nil {
				return err
			}
			x.e.Seq = x.seq
			x.e.Data = append([]byte(nil), data...)
			evs = append(evs, x)
			return nil
		}); err != nil {
			return 0, err
		}
		for _, x := range evs {
			dk, err := s.keyOfPK(tx, x.pk)
			if err != nil {
				return 0, err
			}
			if dk == nil {
				return 0, &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
			}
			one := []store.AgentEvent{x.e}
			if err := openEvents(dk, one); err != nil {
				return 0, err
			}
			if err := s.indexSealedEvent(tx, dk, x.pk, x.seq, x.ts, one[0].Data); err != nil {
				return 0, err
			}
		}
		return int64(len(evs)), nil
	})
}

// sealedUnindexedMsgSQL selects a batch of sealed messages of encrypted
// conversations without a search document, with their conversation's
// data key.
const sealedUnindexedMsgSQL = `SELECT m.session_id, m.seq, m.role, m.content, m.created_at_ms, c.data_key
	FROM conversation_messages AS m JOIN conversations AS c ON c.id = m.session_id
	WHERE c.data_key <> '' AND substr(m.content, 1, 7) = 'ssenc1:' AND NOT EXISTS (SELECT 1 FROM search_docs AS d
		WHERE d.kind = 'message' AND d.session_pk = 0 AND d.owner = m.session_id AND d.pos = m.seq AND d.ref = '')
	ORDER BY m.session_id, m.seq LIMIT ?`

// reindexSealedMessages writes the search documents of sealed messages
// that have none, in batches, when the store opts in (Reindex; on
// PostgreSQL its no-op updates make the message trigger drop them, and
// a store that opts in indexes the encrypted conversations a store
// without the opt-in wrote).
func (s *Store) reindexSealedMessages(ctx context.Context, batch int, res *store.ReindexResult) error {
	if !s.cfg.SearchEncrypted || s.cfg.Keys == nil {
		return nil
	}
	type sealedMsg struct {
		id, kid string
		row     msgRow
	}
	return s.reindexBatches(ctx, res, func(tx Tx) (int64, error) {
		var msgs []sealedMsg
		if err := tx.Query(sealedUnindexedMsgSQL, []any{batch}, func(r Rows) error {
			var x sealedMsg
			if err := r.Scan(&x.id, &x.row.Seq, &x.row.Role, &x.row.Content, &x.row.CreatedAtMS, &x.kid); err != nil {
				return err
			}
			msgs = append(msgs, x)
			return nil
		}); err != nil {
			return 0, err
		}
		for i := range msgs {
			x := &msgs[i]
			one := []msgRow{x.row}
			if err := s.openMsgRows(x.kid, one); err != nil { // conv_crypt.go
				return 0, err
			}
			dk, err := s.dataKey(ctx, x.kid)
			if err != nil {
				return 0, err
			}
			if err := s.indexSealedMessage(tx, dk, x.id, x.row.Seq, x.row.Role, x.row.CreatedAtMS, one[0].plain); err != nil {
				return 0, err
			}
		}
		return int64(len(msgs)), nil
	})
}

// reindexBatches runs batch in write transactions until one indexes
// nothing, counting the items and batches into res.
func (s *Store) reindexBatches(ctx context.Context, res *store.ReindexResult, batch func(tx Tx) (int64, error)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int64
		if err := s.write(ctx, func(tx Tx) error {
			var err error
			n, err = batch(tx)
			return err
		}); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		res.Items += n
		res.Batches++
	}
}
