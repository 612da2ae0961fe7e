package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// TestExportDownload: /export serves the store's export document as an
// attachment, linked from the overview and from a session's page; it
// imports, holds what the store holds, changes nothing, and is absent
// while the console hides or redacts content, or with NoExport.
func TestExportDownload(t *testing.T) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) {
			st, f, _ := seeded(t, b)
			srv := newServer(t, st, f, console.Options{})
			_, overview := get(t, srv, prefix+"/")
			if !strings.Contains(overview, `href="`+prefix+`/export" download`) {
				t.Error("the overview does not link the export download")
			}
			_, page := get(t, srv, prefix+"/governed/"+url.PathEscape(f.Governed))
			if !strings.Contains(page, `href="`+prefix+`/export?id=`+url.QueryEscape(f.Governed)+`"`) {
				t.Error("the governed session's page does not link its export")
			}
			resp, body := get(t, srv, prefix+"/export")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /export: %d %s", resp.StatusCode, truncate(body))
			}
			if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".json") {
				t.Errorf("Content-Disposition %q", cd)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			checkSecurityHeaders(t, "export", resp, true)
			var doc archive.Document
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("the download is not an export document: %v", err)
			}
			if doc.Format != archive.Format || len(doc.Governed) == 0 || len(doc.Conversations) == 0 ||
				len(doc.Runtime) == 0 || doc.AgentSessions == nil || len(doc.AgentSessions.Sessions) == 0 || doc.Audit == nil {
				t.Errorf("the download leaves facets out: %s", truncate(body))
			}
			dst, err := sqlstore.Open(t.Context(), sqltest.FreshPath(t, "imported.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			res, err := archive.Import(t.Context(), dst, strings.NewReader(body), archive.ImportOptions{})
			if err != nil {
				t.Fatalf("the download does not import: %v", err)
			}
			var direct bytes.Buffer
			counts, err := archive.Export(t.Context(), st, &direct, archive.ExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts != counts {
				t.Errorf("the download imported %+v, the store exports %+v", res.Counts, counts)
			}

			resp, body = get(t, srv, prefix+"/export?id="+url.QueryEscape(f.Governed))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /export?id=: %d", resp.StatusCode)
			}
			var one archive.Document
			if err := json.Unmarshal([]byte(body), &one); err != nil || len(one.Governed) != 1 || one.Governed[0].ID != f.Governed {
				t.Errorf("export of one session: %v %s", err, truncate(body))
			}
			if resp, _ := get(t, srv, prefix+"/export?id=nope"); resp.StatusCode != http.StatusNotFound {
				t.Errorf("export of a missing id: %d, want 404", resp.StatusCode)
			}
			if resp, _ := get(t, srv, prefix+"/export?id="); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("export of an empty id: %d, want 400", resp.StatusCode)
			}
		})
	}
	st, f, _ := seeded(t, sqliteBackend)
	for name, opt := range map[string]console.Options{
		"NoExport":    {NoExport: true},
		"HideContent": {HideContent: true},
		"Redact":      {Redact: func(_, s string) string { return s }},
	} {
		srv := newServer(t, st, f, opt)
		if resp, _ := get(t, srv, prefix+"/export"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: /export is %d, want 404", name, resp.StatusCode)
		}
		if _, overview := get(t, srv, prefix+"/"); strings.Contains(overview, prefix+"/export") {
			t.Errorf("%s: the overview links the export", name)
		}
	}
}
