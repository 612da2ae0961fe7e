package console

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/store"
)

// exportOn reports whether the console offers the export download: not
// when Options.NoExport says so, nor when it hides or redacts content (an
// export is the stored data exactly, so it would serve what the pages
// hide).
func (c *console) exportOn() bool {
	return !c.opt.NoExport && !c.opt.HideContent && c.opt.Redact == nil && !c.tenant
}

// exportLink is the link to the export download of the sessions of ids
// (everything when none), "" when the console offers none.
func (c *console) exportLink(ids ...string) string {
	if !c.exportOn() {
		return ""
	}
	u := c.link("export")
	for i, id := range ids {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "id=" + url.QueryEscape(id)
	}
	return u
}

// download streams the export document of the store (package archive),
// or of the sessions named by ?id= (repeatable), as a file to save. It
// reads one snapshot and writes nothing. An error before the first byte
// is an error page; one after it aborts the response, so that the client
// sees a failed download rather than a complete-looking partial file.
func (c *console) download(w http.ResponseWriter, r *http.Request) error {
	if !c.exportOn() {
		return errPageNotFound
	}
	ids := r.URL.Query()["id"]
	for _, id := range ids {
		if err := store.ValidateID("id", id); err != nil {
			return err
		}
	}
	now := c.now().UTC()
	name := "sessionstore-export-" + now.Format("20060102T150405Z") + ".json"
	if len(ids) == 1 {
		name = "sessionstore-export-" + fileSafe(ids[0]) + ".json"
	}
	out := &startWriter{w: w, start: func() {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
		h.Set("Cache-Control", "no-store")
	}}
	if _, err := archive.Export(r.Context(), c.st, out, archive.ExportOptions{IDs: ids, Now: now, Keys: c.opt.Keys}); err != nil {
		if !out.started {
			return err
		}
		c.log.Error("console: export failed after it began", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// startWriter calls start before the first byte it writes.
type startWriter struct {
	w       http.ResponseWriter
	start   func()
	started bool
}

func (s *startWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		s.start()
	}
	return s.w.Write(p)
}

// fileSafe keeps the letters, digits, '-', '_' and '.' of an id for a file
// name (at most 64 of them), replacing the rest with '_'.
func fileSafe(id string) string {
	b := []byte(id)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}
