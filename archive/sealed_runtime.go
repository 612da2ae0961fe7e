package archive

// Encrypted runtime sessions in an export (issue 29, migration 20). A
// runtime session the store keeps encrypted (store.RuntimeSession.DataKeyID)
// is written sealed with its own data key, as an agent session is
// (sealed.go): its workspace directory and, of each upload, the marker,
// the workspace path, the SHA-256 and the content, each bound to the
// session's key, its id and the upload's ref. The document names the key
// (data_key); without the keyring the export refuses the session
// (store.ErrKeyUnavailable) and an import cannot open it.

import (
	"context"
	"encoding/base64"

	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const adArchiveRuntime = "archive runtime session"

func (r *RuntimeSession) ad(parts ...string) []byte {
	return sskeys.AD(append([]string{adArchiveRuntime, r.DataKey, r.Session.ID}, parts...)...)
}

// seal seals r's content with its data key keyID.
func (r *RuntimeSession) seal(ctx context.Context, ring store.KeyRing, keyID string) error {
	dk, err := sessionKey(ctx, ring, keyID)
	if err != nil {
		return err
	}
	r.DataKey = keyID
	r.Session.WorkspaceDir = dk.Seal([]byte(r.Session.WorkspaceDir), r.ad("workspace_dir"))
	for i := range r.Uploads {
		u := &r.Uploads[i]
		content, err := base64.StdEncoding.DecodeString(u.ContentBase64)
		if err != nil {
			return err
		}
		u.Marker = dk.Seal([]byte(u.Marker), r.ad("upload", u.RefID, "marker"))
		u.WorkspacePath = dk.Seal([]byte(u.WorkspacePath), r.ad("upload", u.RefID, "workspace_path"))
		u.SHA256 = dk.Seal([]byte(u.SHA256), r.ad("upload", u.RefID, "sha256"))
		u.ContentBase64 = dk.Seal(content, r.ad("upload", u.RefID, "content"))
	}
	return nil
}

// open opens a sealed runtime session's content in place (no-op for a
// plaintext one).
func (r *RuntimeSession) open(ctx context.Context, ring store.KeyRing) error {
	if r.DataKey == "" {
		return nil
	}
	dk, err := openKey(ctx, ring, r.DataKey)
	if err != nil {
		return err
	}
	field := func(v string, parts ...string) (string, error) {
		p, err := dk.Open([]byte(v), r.ad(parts...))
		return string(p), err
	}
	if r.Session.WorkspaceDir, err = field(r.Session.WorkspaceDir, "workspace_dir"); err != nil {
		return err
	}
	for i := range r.Uploads {
		u := &r.Uploads[i]
		if u.Marker, err = field(u.Marker, "upload", u.RefID, "marker"); err != nil {
			return err
		}
		if u.WorkspacePath, err = field(u.WorkspacePath, "upload", u.RefID, "workspace_path"); err != nil {
			return err
		}
		if u.SHA256, err = field(u.SHA256, "upload", u.RefID, "sha256"); err != nil {
			return err
		}
		content, err := field(u.ContentBase64, "upload", u.RefID, "content")
		if err != nil {
			return err
		}
		u.ContentBase64 = base64.StdEncoding.EncodeToString([]byte(content))
	}
	r.DataKey = ""
	return nil
}
