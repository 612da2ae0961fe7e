package sqlcore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

const (
	upColumns = `session_id, ref_id, marker, workspace_path, sha256, size_bytes, created_at_ms`

	rtExistsSQL = `SELECT 1 FROM runtime_sessions WHERE id = ? AND tenant = ?`

	// Content is shared within a tenant only (migration 25): a blob is
	// keyed by (tenant, sha256).
	upPutBlobSQL = `INSERT INTO upload_blobs (tenant, sha256, size_bytes, content) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, sha256) DO NOTHING`

	upPutSQL = `INSERT INTO uploads (` + upColumns + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, ref_id) DO UPDATE SET
			marker = excluded.marker,
			workspace_path = excluded.workspace_path,
			sha256 = excluded.sha256,
			size_bytes = excluded.size_bytes,
			created_at_ms = excluded.created_at_ms`

	upGetSQL = `SELECT ` + upColumns + upReadColumn + ` FROM uploads WHERE session_id = ? AND ref_id = ? AND tenant = ?`

	upReadSQL = `SELECT u.session_id, u.ref_id, u.marker, u.workspace_path, u.sha256,
			u.size_bytes, u.created_at_ms, b.content,
			(SELECT rs.data_key FROM runtime_sessions AS rs WHERE rs.id = u.session_id) AS data_key, u.sealed_digest
		FROM uploads AS u JOIN upload_blobs AS b ON b.tenant = u.tenant AND b.sha256 = u.sha256
		WHERE u.session_id = ? AND u.ref_id = ? AND u.tenant = ?`

	upListSQL = `SELECT ` + upColumns + upReadColumn + ` FROM uploads
		WHERE session_id = ? AND tenant = ? AND ref_id > ? ORDER BY ref_id LIMIT ?`
)

// upRow is an uploads row as stored.
type upRow struct {
	SessionID     string `db:"session_id"`
	RefID         string `db:"ref_id"`
	Marker        string `db:"marker"`
	WorkspacePath string `db:"workspace_path"`
	SHA256        []byte `db:"sha256"`
	SizeBytes     int64  `db:"size_bytes"`
	CreatedAtMS   int64  `db:"created_at_ms"`
	// The session's data key and the sealed digest (crypt_runtime.go).
	DataKey      string `db:"data_key"`
	SealedDigest string `db:"sealed_digest"`
	blobKey      []byte // an encrypted upload's blob key, once opened
}

func (r *upRow) upload() store.Upload {
	return store.Upload{
		SessionID:     r.SessionID,
		RefID:         r.RefID,
		Marker:        r.Marker,
		WorkspacePath: r.WorkspacePath,
		SizeBytes:     r.SizeBytes,
		SHA256:        hex.EncodeToString(r.SHA256),
		CreatedAt:     rowcodec.FromMillis(r.CreatedAtMS),
	}
}

// PutUpload stores content under (session, ref) (see store.Uploads.PutUpload).
// The content is hashed before the write transaction, so a large upload does
// not hold up other writers while it is hashed.
func (r *Runtime) PutUpload(ctx context.Context, req store.PutUploadRequest) (store.Upload, error) {
	if err := req.Validate(); err != nil {
		return store.Upload{}, err
	}
	sum, err := req.CheckContent(r.s.cfg.MaxUploadBytes)
	if err != nil {
		return store.Upload{}, err
	}
	content := req.Content
	if content == nil {
		content = []byte{} // NOT NULL: an empty upload is an empty blob
	}
	size := int64(len(content))
	// An encrypted session's upload is sealed with its data key, before
	// the write transaction (crypt_runtime.go).
	dk, err := r.s.rtKeyOf(ctx, nil, req.SessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Upload{}, rtNotFound(req.SessionID)
	} else if err != nil {
		return store.Upload{}, err
	}
	up := sealUpload(dk, req.RefID, req.Marker, req.WorkspacePath, sum, content)
	var out store.Upload
	err = r.s.write(ctx, func(tx Tx) error {
		var one int
		// The session must outlive the transaction (where the dialect
		// locks rows: the lock a foreign key check takes).
		if err := tx.Get(&one, r.s.q.rtKeyShare, req.SessionID, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return rtNotFound(req.SessionID)
		} else if err != nil {
			return err
		}
		if err := checkKeyOf(tx, req.SessionID, dk); err != nil {
			return err
		}
		if err := r.s.putBlob(tx, up); err != nil {
			return err
		}
		now := r.s.now()
		if _, err := tx.Exec(upPutSQL, req.SessionID, req.RefID, up.marker, up.path,
			up.blobKey, size, rowcodec.ToMillis(now), r.s.tenant); err != nil {
			return err
		}
		if dk != nil {
			if _, err := tx.Exec(upDigestSQL, up.digest, req.SessionID, req.RefID); err != nil {
				return err
			}
		}
		out = store.Upload{
			SessionID: req.SessionID, RefID: req.RefID, Marker: req.Marker,
			WorkspacePath: req.WorkspacePath, SizeBytes: size,
			SHA256: hex.EncodeToString(sum[:]), CreatedAt: now,
		}
		return nil
	})
	if err != nil {
		return store.Upload{}, err
	}
	return out, nil
}

// putBlob stores an upload's blob in the store's tenant unless the tenant
// holds it already. Writers of one (tenant, blob key) serialize with the
// blob collector on the lock its trigger takes (migration 25: the tenant,
// '/', the hex key).
func (s *Store) putBlob(tx Tx, up sealedUpload) error {
	if err := s.lockKey(tx, lockClassUploadBlob, s.tenant+"/"+hex.EncodeToString(up.blobKey)); err != nil {
		return err
	}
	_, err := tx.Exec(upPutBlobSQL, s.tenant, up.blobKey, int64(len(up.blob)), up.blob)
	return err
}

// missingUpload tells a missing session from a missing upload.
func (r *Runtime) missingUpload(ctx context.Context, sessionID, refID string) error {
	var one int
	err := r.s.get(ctx, &one, rtExistsSQL, sessionID, r.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return rtNotFound(sessionID)
	}
	if err != nil {
		return err
	}
	return &store.NotFoundError{Resource: "upload", ID: refID}
}

func validateUploadKey(sessionID, refID string) error {
	if err := store.ValidateID("session_id", sessionID); err != nil {
		return err
	}
	return store.ValidateID("ref_id", refID)
}

// GetUpload returns the entry of (session, ref) without its content.
func (r *Runtime) GetUpload(ctx context.Context, sessionID, refID string) (store.Upload, error) {
	if err := validateUploadKey(sessionID, refID); err != nil {
		return store.Upload{}, err
	}
	var row upRow
	err := r.s.get(ctx, &row, upGetSQL, sessionID, refID, r.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Upload{}, r.missingUpload(ctx, sessionID, refID)
	}
	if err != nil {
		return store.Upload{}, err
	}
	if err := r.s.openUploadRow(ctx, &row); err != nil { // crypt_runtime.go
		return store.Upload{}, err
	}
	return row.upload(), nil
}

// ReadUpload returns the entry and its content after verifying the content
// against the stored digest and size.
func (r *Runtime) ReadUpload(ctx context.Context, sessionID, refID string) (store.Upload, []byte, error) {
	if err := validateUploadKey(sessionID, refID); err != nil {
		return store.Upload{}, nil, err
	}
	var row struct {
		upRow
		Content []byte `db:"content"`
	}
	err := r.s.get(ctx, &row, upReadSQL, sessionID, refID, r.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Upload{}, nil, r.missingUpload(ctx, sessionID, refID)
	}
	if err != nil {
		return store.Upload{}, nil, err
	}
	if err := r.s.openUploadRow(ctx, &row.upRow); err != nil { // crypt_runtime.go
		return store.Upload{}, nil, err
	}
	if row.Content, err = r.s.openBlob(ctx, &row.upRow, row.Content); err != nil {
		return store.Upload{}, nil, err
	}
	sum := sha256.Sum256(row.Content)
	if !bytes.Equal(sum[:], row.SHA256) || int64(len(row.Content)) != row.SizeBytes {
		r.s.log.Error("upload content does not match its digest",
			"session_id", sessionID, "ref_id", refID)
		return store.Upload{}, nil, fmt.Errorf("%w: upload content does not match its digest", store.ErrCorrupt)
	}
	content := row.Content
	if content == nil {
		content = []byte{}
	}
	return row.upload(), content, nil
}

// ListUploads returns a page of a session's upload entries in ref id order.
func (r *Runtime) ListUploads(ctx context.Context, req store.ListUploadsRequest) (store.Page[store.Upload], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[store.Upload]{}, err
	}
	var one int
	if err := r.s.get(ctx, &one, rtExistsSQL, req.SessionID, r.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return store.Page[store.Upload]{}, rtNotFound(req.SessionID)
	} else if err != nil {
		return store.Page[store.Upload]{}, err
	}
	var rows []upRow
	if err := r.s.selectRows(ctx, &rows, upListSQL, req.SessionID, r.s.tenant, req.After, req.Limit+1); err != nil {
		return store.Page[store.Upload]{}, err
	}
	page := store.Page[store.Upload]{Items: make([]store.Upload, 0, min(len(rows), req.Limit))}
	for i := range rows {
		if i == req.Limit {
			page.Next = page.Items[len(page.Items)-1].RefID
			break
		}
		if err := r.s.openUploadRow(ctx, &rows[i]); err != nil { // crypt_runtime.go
			return store.Page[store.Upload]{}, err
		}
		page.Items = append(page.Items, rows[i].upload())
	}
	return page, nil
}
