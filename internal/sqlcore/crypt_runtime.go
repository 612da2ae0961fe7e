package sqlcore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// Encryption at rest of runtime sessions and uploads (migration 00020).
//
// A runtime session created by a store with a keyring gets a data key of
// its own (runtime_sessions.data_key). Sealed columns, with the row's
// identity as associated data:
//
//   - runtime_sessions.workspace_dir (the one free-text column of a
//     session: a customer's path);
//   - uploads.marker and uploads.workspace_path (they name the customer's
//     file), bound to the entry's ref id;
//   - uploads.sealed_digest: the content's SHA-256, sealed;
//   - upload_blobs.content, sealed as bytes (keys.SealBlob), bound to the
//     blob's key.
//
// Plaintext, because counting, eviction, the global cap, the idle sweep
// and the turn protocol query them: the session id, agent alias, chat
// mode, owner id, model overrides (configuration, not content), times,
// turn state and cancel causes (an enumeration), and each upload's ref id
// and size.
//
// No sharing by hash for encrypted sessions: an encrypted upload's blob
// is keyed by keys.DataKey.Tag(adBlobKey, SHA-256 of the content), an HMAC
// under a key derived from the session's data key, not by the digest. A
// reader without the data key cannot confirm a guessed content from it
// (as it could from a bare SHA-256), two sessions never share a blob
// (their keys differ), and identical content within one session still
// shares one. A random blob id would hide even that repetition within a
// session, but would store a copy per entry; the HMAC keeps the
// per-session dedup and reveals only what the entry count already shows.
// Deleting the session deletes its entries (cascade), migration 3's
// trigger deletes the blobs no entry names, and the data key is queued
// for shredding (migration 20's trigger), so the blobs in old backups are
// unreadable too.

// Associated-data tags of the runtime sealed columns.
const (
	adWorkspace  = "runtime_sessions.workspace_dir"
	adUpMarker   = "uploads.marker"
	adUpPath     = "uploads.workspace_path"
	adUpDigest   = "uploads.sealed_digest"
	adUpBlob     = "upload_blobs.content"
	adBlobKey    = "upload_blobs.sha256"
	rtKeyOfSQL   = `SELECT data_key FROM runtime_sessions WHERE id = ?`
	rtKeySetSQL  = `UPDATE runtime_sessions SET data_key = ? WHERE id = ?`
	upDigestSQL  = `UPDATE uploads SET sealed_digest = ? WHERE session_id = ? AND ref_id = ?`
	upReadColumn = `, (SELECT rs.data_key FROM runtime_sessions AS rs WHERE rs.id = uploads.session_id) AS data_key, sealed_digest`
)

// rtKeyOf returns the sealer of runtime session id (nil: plaintext);
// sql.ErrNoRows when there is no such session.
func (s *Store) rtKeyOf(ctx context.Context, r Tx, id string) (*keys.DataKey, error) {
	var kid string
	var err error
	if r != nil {
		err = r.Get(&kid, rtKeyOfSQL, id)
	} else {
		err = s.get(ctx, &kid, rtKeyOfSQL, id)
	}
	if err != nil {
		return nil, err
	}
	return s.dataKey(ctx, kid)
}

// open opens the content column of a runtime session row in place.
func (row *rtRow) open(ctx context.Context, s *Store) error {
	dk, err := s.dataKey(ctx, row.DataKey)
	if err != nil {
		return err
	}
	p, err := opened(dk, []byte(row.WorkspaceDir), adWorkspace)
	if err != nil {
		return err
	}
	row.WorkspaceDir = string(p)
	return nil
}

// sealedUpload is an upload as an encrypted (or plaintext, dk nil)
// session stores it.
type sealedUpload struct {
	blobKey []byte // upload_blobs.sha256 and uploads.sha256
	blob    []byte // upload_blobs.content
	marker  string
	path    string
	digest  string // uploads.sealed_digest ('' when plaintext)
}

// sealUpload returns the stored form of an upload of content (digest sum)
// under ref in the session whose sealer is dk.
func sealUpload(dk *keys.DataKey, ref, marker, path string, sum [sha256.Size]byte, content []byte) sealedUpload {
	if dk == nil {
		return sealedUpload{blobKey: sum[:], blob: content, marker: marker, path: path}
	}
	bk := dk.Tag(adBlobKey, sum[:])
	return sealedUpload{
		blobKey: bk,
		blob:    dk.SealBlob(content, keys.AD(dk.ID(), adUpBlob, hex.EncodeToString(bk))),
		marker:  sealed(dk, []byte(marker), adUpMarker, ref),
		path:    sealed(dk, []byte(path), adUpPath, ref),
		digest:  sealed(dk, []byte(hex.EncodeToString(sum[:])), adUpDigest, ref),
	}
}

// openUploadRow opens an uploads row read with its session's data key id
// and sealed digest, in place: afterwards SHA256 is the content's digest.
func (s *Store) openUploadRow(ctx context.Context, row *upRow) error {
	dk, err := s.dataKey(ctx, row.DataKey)
	if err != nil {
		return err
	}
	if dk == nil {
		if row.SealedDigest != "" || keys.IsSealed([]byte(row.Marker)) || keys.IsSealed([]byte(row.WorkspacePath)) {
			return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
		}
		return nil
	}
	m, err := opened(dk, []byte(row.Marker), adUpMarker, row.RefID)
	if err != nil {
		return err
	}
	p, err := opened(dk, []byte(row.WorkspacePath), adUpPath, row.RefID)
	if err != nil {
		return err
	}
	d, err := opened(dk, []byte(row.SealedDigest), adUpDigest, row.RefID)
	if err != nil {
		return err
	}
	sum, err := hex.DecodeString(string(d))
	if err != nil || len(sum) != sha256.Size {
		return &store.KeyError{KeyID: dk.ID(), Op: "open", Kind: store.ErrKeyMismatch}
	}
	row.blobKey = row.SHA256
	row.Marker, row.WorkspacePath, row.SHA256 = string(m), string(p), sum
	return nil
}

// openBlob returns the plaintext of an upload's stored content (as it is
// for a plaintext session's).
func (s *Store) openBlob(ctx context.Context, row *upRow, stored []byte) ([]byte, error) {
	dk, err := s.dataKey(ctx, row.DataKey)
	if err != nil || dk == nil {
		return stored, err
	}
	return dk.OpenBlob(stored, keys.AD(dk.ID(), adUpBlob, hex.EncodeToString(row.blobKey)))
}

// errKeyChanged: the session was replaced between the read of its key and
// the write (rare; the caller may retry).
var errKeyChanged = errors.New("runtime session replaced during the upload")

// checkKeyOf fails when runtime session id's data key is no longer dk's
// (read in the write transaction, under the session's key-share lock).
func checkKeyOf(tx Tx, id string, dk *keys.DataKey) error {
	var kid string
	if err := tx.Get(&kid, rtKeyOfSQL, id); errors.Is(err, sql.ErrNoRows) {
		return rtNotFound(id)
	} else if err != nil {
		return err
	}
	if kid != keyID(dk) {
		return &store.ConflictError{Resource: "upload", ID: id, Reason: errKeyChanged.Error()}
	}
	return nil
}

// setRuntimeKey names dk as runtime session id's data key (no-op for a
// plaintext session).
func setRuntimeKey(tx Tx, id string, dk *keys.DataKey) error {
	if dk == nil {
		return nil
	}
	_, err := tx.Exec(rtKeySetSQL, dk.ID(), id)
	return err
}
