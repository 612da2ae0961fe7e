package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

const (
	artifactColumns = `uri, artifact_id, tool_name, content, original_bytes, shown_bytes, created_at_ms, updated_at_ms`
	// artifactPutSQL replaces the artifact with the same URI, keeping its
	// creation time.
	artifactPutSQL = `INSERT INTO conversation_artifacts (session_id, ` + artifactColumns + `, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, uri) DO UPDATE SET artifact_id = excluded.artifact_id,
		tool_name = excluded.tool_name, content = excluded.content, original_bytes = excluded.original_bytes,
		shown_bytes = excluded.shown_bytes, updated_at_ms = excluded.updated_at_ms`
	artifactGetSQL = `SELECT ` + artifactColumns + ` FROM conversation_artifacts WHERE session_id = ? AND uri = ? AND tenant = ?`
	artifactAllSQL = `SELECT ` + artifactColumns + ` FROM conversation_artifacts WHERE session_id = ? AND tenant = ? ORDER BY uri`
	// The reads, with the conversation's data key (conv_crypt.go).
	artifactGetKeyedSQL = `SELECT ` + convKeyCol + artifactColumns + ` FROM conversation_artifacts WHERE session_id = ? AND uri = ? AND tenant = ?`
	artifactAllKeyedSQL = `SELECT ` + convKeyCol + artifactColumns + ` FROM conversation_artifacts WHERE session_id = ? AND tenant = ? ORDER BY uri`
)

// artifactRow is a conversation_artifacts row.
type artifactRow struct {
	URI           string `db:"uri"`
	ArtifactID    string `db:"artifact_id"`
	ToolName      string `db:"tool_name"`
	Content       string `db:"content"`
	OriginalBytes int64  `db:"original_bytes"`
	ShownBytes    int64  `db:"shown_bytes"`
	CreatedAtMS   int64  `db:"created_at_ms"`
	UpdatedAtMS   int64  `db:"updated_at_ms"`
	DataKey       string `db:"data_key"` // keyed reads only
}

func (r *artifactRow) artifact() store.Artifact {
	return store.Artifact{
		URI: r.URI, ID: r.ArtifactID, ToolName: r.ToolName, Content: r.Content,
		OriginalBytes: r.OriginalBytes, ShownBytes: r.ShownBytes,
		CreatedAt: rowcodec.FromMillis(r.CreatedAtMS), UpdatedAt: rowcodec.FromMillis(r.UpdatedAtMS),
	}
}

// openedArtifact decodes a row read with its conversation's data key.
func (c *Conversations) openedArtifact(r *artifactRow) (store.Artifact, error) {
	dk, err := c.rowKey(r.DataKey)
	if err != nil {
		return store.Artifact{}, err
	}
	if r.Content, err = openedText(dk, r.Content, adArtifact, r.URI); err != nil {
		return store.Artifact{}, err
	}
	return r.artifact(), nil
}

// PutArtifacts stores artifacts, replacing those with the same URI, in one
// transaction (see store.Conversations.PutArtifacts).
func (c *Conversations) PutArtifacts(ctx context.Context, id string, artifacts ...store.Artifact) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	if len(artifacts) > store.MaxRecordsPerCall {
		return store.Invalid("artifacts", "too many entries")
	}
	for i := range artifacts {
		if err := artifacts[i].Validate(fmt.Sprintf("artifacts[%d]", i)); err != nil {
			return err
		}
	}
	return c.s.write(ctx, func(tx Tx) error {
		dk, err := c.touchKey(tx, id) // conv_crypt.go
		if err != nil {
			return err
		}
		now := rowcodec.ToMillis(c.s.now())
		for _, a := range artifacts {
			if _, err := tx.Exec(artifactPutSQL, id, a.URI, a.ID, a.ToolName, sealedText(dk, a.Content, adArtifact, a.URI),
				a.OriginalBytes, a.ShownBytes, now, now, c.s.tenant); err != nil {
				return err
			}
		}
		return nil
	})
}

// Artifact returns one artifact by URI (see store.Conversations.Artifact).
func (c *Conversations) Artifact(ctx context.Context, id, uri string) (store.Artifact, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Artifact{}, err
	}
	if uri == "" {
		return store.Artifact{}, store.Invalid("uri", "must not be empty")
	}
	var row artifactRow
	err := c.s.get(ctx, &row, artifactGetKeyedSQL, id, id, uri, c.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		if err := c.mustExist(ctx, id); err != nil {
			return store.Artifact{}, err
		}
		return store.Artifact{}, &store.NotFoundError{Resource: "artifact", ID: uri}
	}
	if err != nil {
		return store.Artifact{}, err
	}
	return c.openedArtifact(&row)
}

// Artifacts returns all artifacts of the conversation ordered by URI.
func (c *Conversations) Artifacts(ctx context.Context, id string) ([]store.Artifact, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	var rows []artifactRow
	if err := c.s.selectRows(ctx, &rows, artifactAllKeyedSQL, id, id, c.s.tenant); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return []store.Artifact{}, c.mustExist(ctx, id)
	}
	out := make([]store.Artifact, len(rows))
	for i := range rows {
		a, err := c.openedArtifact(&rows[i])
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}
