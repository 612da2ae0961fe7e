package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// Encryption of conversations (migrations 00016 and 00021). A
// conversation created by a store with a keyring gets a data key of its
// own (conversations.data_key); a fork gets a new one. Sealed with it,
// each with a constant tag, the data key's id and the row's position as
// associated data:
//
//   - conversation_messages.content (also compaction records and the
//     rows lineage moves to conversation_retired_messages): tag
//     adMessage, position seq;
//   - conversation_artifacts.content: tag adArtifact, the artifact's URI;
//   - conversation_trace_events.data: tag adTrace, seq;
//   - conversation_runs.record and conversation_run_events.payload: tags
//     adRun and adRunEvent, the run id (and seq);
//   - conversation_reports.report: tag adReport, its report id;
//   - the conversation row's content (migration 00024,
//     conv_row_crypt.go): system_prompt (free text: the instructions),
//     tasks (the task list's titles, bodies and success criteria),
//     queue_config, confirmation_policy, permission_policy and
//     security_config (JSON documents the store does not interpret, which
//     may name paths, commands or rules of the customer's): tag adConvRow,
//     the column's name. A NULL document stays NULL. The row says that
//     they are sealed (content_sealed = 1), so plaintext there is an
//     error; rows written before migration 00024 (content_sealed = 0)
//     hold them in plaintext and still read, and the next Save seals them.
//
// Plaintext, because listing, governing, sweeping or searching needs
// them: every id, seq, role, kind, name, status, URI, tool name, time,
// size and token count; of the conversation row, what List, Info and the
// console's list show or filter on: name, workspace, state, parent id,
// model name, counters, usage, cost and times; and the settings that are
// enums, numbers or flags (storage type, planning mode, goal tracking,
// context length, auto-compaction, thinking), the tool names (metadata,
// as tool names are everywhere) and llm_config (provider, model and base
// URL; the API key is never stored); cost records (model, provider and a
// session id are metadata, the rest numbers).
//
// The associated data binds neither the table nor the conversation's id:
// a rewind or a delete moves message rows to a retired history
// (conversation_retired, which names the same data key since migration
// 00021) and forks read them there. A row moved to another position, or
// into a conversation with another key, does not open.

// Associated-data tags of conversations' sealed columns.
const (
	adMessage  = "conversation.message"
	adArtifact = "conversation.artifact"
	adTrace    = "conversation.trace"
	adRun      = "conversation.run"
	adRunEvent = "conversation.run_event"
	adReport   = "conversation.report"
)

const (
	convKeySetSQL    = `UPDATE conversations SET data_key = ? WHERE id = ?`
	retiredKeySetSQL = `UPDATE conversation_retired SET data_key = ? WHERE id = ?`
	// convTouchKeySQL is convTouchSQL returning the conversation's data
	// key: the write of a record learns it with the row it updates.
	convTouchKeySQL = `UPDATE conversations SET version = version + 1, updated_at_ms = ? WHERE id = ? AND tenant = ? RETURNING data_key`
	// convKeyCol is the first column of a read of a conversation's
	// records: its data key, read with them in one statement (its
	// argument, the conversation's id, comes first).
	convKeyCol = `(SELECT data_key FROM conversations WHERE id = ?) AS data_key, `
)

// touchKey is touch returning the sealer of the conversation's data key
// (nil for a plaintext conversation).
func (c *Conversations) touchKey(tx Tx, id string) (*keys.DataKey, error) {
	var kid string
	err := tx.Get(&kid, convTouchKeySQL, c.nowMS(), id, c.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return c.s.dataKey(context.Background(), kid)
}

// rowKey returns the sealer of the data key named by a record read with
// convKeyCol.
func (c *Conversations) rowKey(kid string) (*keys.DataKey, error) {
	return c.s.dataKey(context.Background(), kid)
}

// shredDropped drains the shred queue after a write that may have
// dropped a retired history (a fork leaving a deleted parent's rows by a
// trim, a pop or a save): the parent's key goes with the last history
// naming it. Only an encrypting store can shred.
func (c *Conversations) shredDropped(ctx context.Context) {
	if c.s.Encrypted() {
		c.s.shredAfter(ctx)
	}
}

// sealMsg is a message's stored content in a conversation sealed with dk.
func sealMsg(dk *keys.DataKey, content []byte, seq int64) string {
	return sealed(dk, content, adMessage, seqAD(seq))
}

// openMsgRows opens the contents of message rows read from one segment
// of a view, whose rows are sealed with the data key named kid ("" =
// plaintext). The opened bytes are kept in the row (body).
func (s *Store) openMsgRows(kid string, rows []msgRow) error {
	if kid == "" {
		for i := range rows {
			if strings.HasPrefix(rows[i].Content, keys.Marker) {
				return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
			}
		}
		return nil
	}
	dk, err := s.dataKey(context.Background(), kid)
	if err != nil {
		return err
	}
	var ad []byte
	var num [20]byte
	for i := range rows {
		ad = appendAD(ad[:0], kid)
		ad = appendAD(ad, adMessage)
		ad = appendADBytes(ad, strconv.AppendInt(num[:0], rows[i].Seq, 10))
		p, err := dk.OpenInPlace([]byte(rows[i].Content), ad)
		if err != nil {
			return err
		}
		rows[i].plain = p
	}
	return nil
}

// newConvKey creates the data key of a new conversation when the store
// encrypts (nil otherwise); the caller names it in the row with
// setConvKey and discards it (discardKey) if the row is not created.
func (c *Conversations) newConvKey(ctx context.Context) (*keys.DataKey, error) {
	return c.s.newDataKey(ctx)
}

// setConvKey names dk as conversation id's data key (no-op for nil).
func setConvKey(tx Tx, id string, dk *keys.DataKey) error {
	if dk == nil {
		return nil
	}
	_, err := tx.Exec(convKeySetSQL, dk.ID(), id)
	return err
}

// setRetiredKey names the data key of the rows a retired history holds
// (no-op for a plaintext conversation's).
func setRetiredKey(tx Tx, id, kid string) error {
	if kid == "" {
		return nil
	}
	_, err := tx.Exec(retiredKeySetSQL, kid, id)
	return err
}

// sealedText is a sealed text column's stored value.
func sealedText(dk *keys.DataKey, v string, ad ...string) string {
	if dk == nil {
		return v
	}
	return sealed(dk, []byte(v), ad...)
}

// openedText is the plaintext of a sealed text column.
func openedText(dk *keys.DataKey, v string, ad ...string) (string, error) {
	if dk == nil && !strings.HasPrefix(v, keys.Marker) {
		return v, nil
	}
	p, err := opened(dk, []byte(v), ad...)
	if err != nil {
		return "", err
	}
	return string(p), nil
}
