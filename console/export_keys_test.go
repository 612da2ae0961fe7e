package console_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/console"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestExportDownloadWithKeyring: a console started with the store's
// keyring exports encrypted agent and runtime sessions sealed (no
// plaintext in the download, which imports with the keyring); without the
// keyring the download fails rather than serve plaintext.
func TestExportDownloadWithKeyring(t *testing.T) {
	const marker = "PANGOLIN-CONSOLE-4417"
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	line, err := sskeys.GenerateEntry("v1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sskeys.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
		Event: store.AgentEvent{Data: []byte(`{"author":"user","content":{"parts":[{"text":"` + marker + `"}]}}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "rt", AgentAlias: "a", ChatMode: store.ChatModeChat, WorkspaceDir: "/" + marker}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Runtime().PutUpload(ctx, store.PutUploadRequest{SessionID: "rt", RefID: "r", WorkspacePath: "/f", Content: []byte(marker)}); err != nil {
		t.Fatal(err)
	}

	for _, keyed := range []bool{false, true} {
		opts := console.Options{}
		if keyed {
			opts.Keys = ring
		}
		h, err := console.New(st, opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		resp, body := get(t, srv, "/export")
		srv.Close()
		if strings.Contains(body, marker) {
			t.Fatalf("keyring %v: the download holds plaintext of an encrypted session", keyed)
		}
		if !keyed {
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("without the keyring: %d, want an error", resp.StatusCode)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"data_key"`) {
			t.Fatalf("with the keyring: %d %.300s", resp.StatusCode, body)
		}
		dst, err := sqlstore.Open(ctx, filepath.Join(dir, "imported.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		if _, err := archive.Import(ctx, dst, strings.NewReader(body), archive.ImportOptions{Keys: ring}); err != nil {
			t.Fatalf("the download does not import with the keyring: %v", err)
		}
		got, err := dst.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
		if err != nil || len(got.Events) != 1 || !strings.Contains(string(got.Events[0].Data), marker) {
			t.Fatalf("imported agent session: %+v, %v", got, err)
		}
		_, b, err := dst.Runtime().ReadUpload(ctx, "rt", "r")
		if err != nil || string(b) != marker {
			t.Fatalf("imported upload: %q, %v", b, err)
		}
	}
}
