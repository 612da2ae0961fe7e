package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// The sealed session data of a conversation row (migration 00024; the
// choice of columns is in conv_crypt.go's doc comment).

// adConvRow tags a conversation row's sealed column; the column's name
// follows it in the associated data.
const adConvRow = "conversation.row"

const (
	// convRowContentSQL reads a conversation's sealed columns, its data
	// key and whether they are sealed (a fork re-seals them for its own
	// key).
	convRowContentSQL = `SELECT data_key, content_sealed, system_prompt, tasks, queue_config, confirmation_policy,
		permission_policy, security_config FROM conversations WHERE id = ? AND tenant = ?`
	// convRowSealSQL writes a conversation's sealed columns.
	convRowSealSQL = `UPDATE conversations SET system_prompt = ?, tasks = ?, queue_config = ?, confirmation_policy = ?,
		permission_policy = ?, security_config = ?, content_sealed = ? WHERE id = ? AND tenant = ?`
)

// convContentCols are the content columns of a conversations row:
// sealed with the conversation's data key when ContentSealed is 1.
type convContentCols struct {
	SystemPrompt       string         `db:"system_prompt"`
	Tasks              string         `db:"tasks"`
	QueueConfig        sql.NullString `db:"queue_config"`
	ConfirmationPolicy sql.NullString `db:"confirmation_policy"`
	PermissionPolicy   sql.NullString `db:"permission_policy"`
	SecurityConfig     sql.NullString `db:"security_config"`
	// ContentSealed is 1 when the columns above hold sealed values.
	ContentSealed int64 `db:"content_sealed"`
}

// newContentCols are the content columns of conv, whose tasks encode
// to tasks, in plaintext.
func newContentCols(cfg store.ConversationConfig, tasks []byte) convContentCols {
	doc := func(d json.RawMessage) sql.NullString {
		return sql.NullString{String: string(d), Valid: d != nil}
	}
	return convContentCols{SystemPrompt: cfg.SystemPrompt, Tasks: string(tasks),
		QueueConfig: doc(cfg.QueueConfig), ConfirmationPolicy: doc(cfg.ConfirmationPolicy),
		PermissionPolicy: doc(cfg.PermissionPolicy), SecurityConfig: doc(cfg.SecurityConfig)}
}

// each calls fn with the name and a pointer to the value of each column
// that holds a value (a NULL document is left NULL: its absence is not
// content).
func (c *convContentCols) each(fn func(col string, v *string) error) error {
	for _, t := range []struct {
		col string
		v   *string
	}{{"system_prompt", &c.SystemPrompt}, {"tasks", &c.Tasks}} {
		if err := fn(t.col, t.v); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		col string
		v   *sql.NullString
	}{{"queue_config", &c.QueueConfig}, {"confirmation_policy", &c.ConfirmationPolicy},
		{"permission_policy", &c.PermissionPolicy}, {"security_config", &c.SecurityConfig}} {
		if !d.v.Valid {
			continue
		}
		if err := fn(d.col, &d.v.String); err != nil {
			return err
		}
	}
	return nil
}

// seal seals the plaintext columns with dk, in place (nil: they stay
// plaintext and ContentSealed 0).
func (c *convContentCols) seal(dk *keys.DataKey) {
	c.ContentSealed = 0
	if dk == nil {
		return
	}
	_ = c.each(func(col string, v *string) error {
		*v = sealed(dk, []byte(*v), adConvRow, col)
		return nil
	})
	c.ContentSealed = 1
}

// open opens the columns in place with dk, the data key the row names
// (nil for a plaintext conversation). Sealed columns (ContentSealed 1)
// must hold values sealed for this row: plaintext there is
// ErrKeyMismatch, never accepted. Rows written before migration 00024,
// or by a store without a keyring, hold plaintext (ContentSealed 0), and
// a sealed value there is ErrKeyMismatch too.
func (c *convContentCols) open(dk *keys.DataKey) error {
	if c.ContentSealed == 0 {
		return c.each(func(_ string, v *string) error {
			if strings.HasPrefix(*v, keys.Marker) {
				return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
			}
			return nil
		})
	}
	if dk == nil {
		return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
	}
	err := c.each(func(col string, v *string) error {
		p, err := dk.Open([]byte(*v), keys.AD(keyID(dk), adConvRow, col))
		if err != nil {
			return err
		}
		*v = string(p)
		return nil
	})
	if err != nil {
		return err
	}
	c.ContentSealed = 0
	return nil
}

// args are the columns' values as statement arguments, in the order of
// convRowSealSQL.
func (c *convContentCols) args() []any {
	return []any{c.SystemPrompt, c.Tasks, nullStr(c.QueueConfig), nullStr(c.ConfirmationPolicy),
		nullStr(c.PermissionPolicy), nullStr(c.SecurityConfig), c.ContentSealed}
}

// resealFork writes fork's content columns, copied from its parent's
// row, sealed with the fork's data key dk: opened with the parent's key
// first. A plaintext parent forked by a store without a keyring keeps
// the copy as it is.
func (c *Conversations) resealFork(ctx context.Context, tx Tx, parent, fork string, dk *keys.DataKey) error {
	var row struct {
		DataKey string `db:"data_key"`
		convContentCols
	}
	if err := tx.Get(&row, convRowContentSQL, parent, c.s.tenant); err != nil {
		return err
	}
	if dk == nil && row.ContentSealed == 0 {
		return nil
	}
	pk, err := c.s.dataKey(ctx, row.DataKey)
	if err != nil {
		return err
	}
	cc := row.convContentCols
	if err := cc.open(pk); err != nil {
		return err
	}
	cc.seal(dk)
	_, err = tx.Exec(convRowSealSQL, append(cc.args(), fork, c.s.tenant)...)
	return err
}
