package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Upload bounds.
const (
	// DefaultMaxUploadBytes is the default size limit of one upload.
	DefaultMaxUploadBytes = 32 << 20
	// MaxMarkerLength bounds an upload's marker (bytes).
	MaxMarkerLength = 4096
	// MaxUploadLimit is the highest upload size limit a backend accepts
	// (SQLite's blob limit is 1e9 bytes; PostgreSQL keeps the same bound).
	MaxUploadLimit = 512 << 20
)

// Upload is an entry of a session's upload index. Its content is stored
// content-addressed: identical content is kept once, under its SHA-256.
type Upload struct {
	SessionID     string    `json:"session_id"`
	RefID         string    `json:"ref_id"`
	Marker        string    `json:"marker"`
	WorkspacePath string    `json:"workspace_path"`
	SizeBytes     int64     `json:"size_bytes"`
	SHA256        string    `json:"sha256"` // lowercase hex
	CreatedAt     time.Time `json:"created_at"`
}

// PutUploadRequest stores content under a reference of a session.
type PutUploadRequest struct {
	SessionID string
	// RefID names the upload in the session; storing the same RefID again
	// overwrites the entry.
	RefID string
	// Marker is the placeholder the runtime puts in the conversation for
	// this upload (may be empty).
	Marker string
	// WorkspacePath is where the runtime placed the file (data only).
	WorkspacePath string
	// Content is the upload itself (may be empty).
	Content []byte
	// SHA256, when set, is the digest the sender claims (hex); the store
	// verifies it and refuses a mismatch with ErrInvalidInput.
	SHA256 string
}

// Validate checks the request's fields, except the content's size and
// digest (see CheckContent).
func (r PutUploadRequest) Validate() error {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return err
	}
	if err := ValidateID("ref_id", r.RefID); err != nil {
		return err
	}
	if len(r.Marker) > MaxMarkerLength {
		return Invalid("marker", "too long")
	}
	if !validText(r.Marker) {
		return Invalid("marker", "must be valid UTF-8 without NUL")
	}
	if err := ValidatePath("workspace_path", r.WorkspacePath); err != nil {
		return err
	}
	if r.SHA256 != "" {
		if _, err := ParseSHA256(r.SHA256); err != nil {
			return err
		}
	}
	return nil
}

// CheckContent checks the content against limit (bytes) and the claimed
// digest, and returns the content's SHA-256. It refuses oversize content
// with an *UploadTooLargeError before hashing it.
func (r PutUploadRequest) CheckContent(limit int64) ([sha256.Size]byte, error) {
	if n := int64(len(r.Content)); n > limit {
		return [sha256.Size]byte{}, &UploadTooLargeError{SessionID: r.SessionID, RefID: r.RefID, Size: n, Limit: limit}
	}
	sum := sha256.Sum256(r.Content)
	if r.SHA256 != "" {
		claimed, err := ParseSHA256(r.SHA256)
		if err != nil {
			return sum, err
		}
		if claimed != sum {
			return sum, Invalid("sha256", "does not match the content")
		}
	}
	return sum, nil
}

// ParseSHA256 parses a hex SHA-256 digest (either case).
func ParseSHA256(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if len(s) != 2*sha256.Size {
		return d, Invalid("sha256", "must be 64 hex digits")
	}
	if _, err := hex.Decode(d[:], []byte(strings.ToLower(s))); err != nil {
		return d, Invalid("sha256", "must be 64 hex digits")
	}
	return d, nil
}

// UploadTooLargeError refuses an upload over the store's size limit. It
// matches ErrInvalidInput; Error() does not reveal the limit.
type UploadTooLargeError struct {
	SessionID string
	RefID     string
	Size      int64
	Limit     int64
}

// Error is the same for every oversize upload: it does not reveal the
// limit.
func (e *UploadTooLargeError) Error() string {
	return ErrInvalidInput.Error() + ": content: upload too large"
}

// Unwrap makes errors.Is(err, ErrInvalidInput) true.
func (e *UploadTooLargeError) Unwrap() error { return ErrInvalidInput }

// ListUploadsRequest pages through a session's uploads in ref id order.
type ListUploadsRequest struct {
	SessionID string
	// After is the last ref id of the previous page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListUploadsRequest) Normalize() (ListUploadsRequest, error) {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return r, err
	}
	f, err := ListFilter{After: r.After, Limit: r.Limit}.Normalize()
	r.After, r.Limit = f.After, f.Limit
	return r, err
}

// Uploads is the upload part of the Runtime facet. Uploads belong to a
// runtime session and are deleted with it.
type Uploads interface {
	// PutUpload stores content under (session, ref), replacing an entry of
	// the same ref. It computes the SHA-256 of the content, verifies a
	// claimed digest (mismatch: ErrInvalidInput, nothing stored) and
	// refuses content over the size limit (*UploadTooLargeError).
	// ErrNotFound if the session does not exist.
	PutUpload(ctx context.Context, req PutUploadRequest) (Upload, error)
	// GetUpload returns the entry of (session, ref) without its content.
	GetUpload(ctx context.Context, sessionID, refID string) (Upload, error)
	// ReadUpload returns the entry and its content, after checking the
	// content against the stored digest (a mismatch is ErrCorrupt).
	ReadUpload(ctx context.Context, sessionID, refID string) (Upload, []byte, error)
	// ListUploads returns a page of a session's entries in ref id order.
	ListUploads(ctx context.Context, req ListUploadsRequest) (Page[Upload], error)
}
