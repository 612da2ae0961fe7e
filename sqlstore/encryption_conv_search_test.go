package sqlstore_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestEncryptionSearchOptInImport imports encrypted conversations into a
// store that opts in to searching encrypted content: the import (the
// restore path) writes the sealed messages' search documents, so a
// search finds the same message hits, with the same opened text, as in
// a plaintext store that imported the same document; the index check
// finds the index whole.
func TestEncryptionSearchOptInImport(t *testing.T) {
	if raceDetector {
		// No concurrency here, and ~15 s under the race detector: the
		// run without it covers it (CI time).
		t.Skip("covered by the run without the race detector")
	}
	ctx := context.Background()
	p := testProvider(t)
	path := sqlstore.FreshDBPath(t, "s.db")
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fillMarkedConv(t, st, "c")
	var doc bytes.Buffer
	if _, err := archive.Export(ctx, st, &doc, archive.ExportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}

	encPath := sqlstore.FreshDBPath(t, "opt-in.db")
	encRing, err := sskeys.OpenRing(sskeys.RingDir(encPath), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sqlstore.Open(ctx, encPath, sqlstore.WithKeyRing(encRing), sqlstore.WithSearchEncrypted())
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	plain, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "plain.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	hits := map[string]map[string]string{} // store -> "session/seq" -> snippet
	for name, s := range map[string]*sqlstore.Store{"opt-in": enc, "plain": plain} {
		if _, err := archive.Import(ctx, s, bytes.NewReader(doc.Bytes()), archive.ImportOptions{Keys: ring}); err != nil {
			t.Fatalf("import into the %s store: %v", name, err)
		}
		res, err := s.Search(ctx, store.SearchQuery{Query: encMarker, Kinds: []store.SearchKind{store.SearchMessage}, Limit: store.MaxSearchLimit})
		if err != nil {
			t.Fatal(err)
		}
		hits[name] = map[string]string{}
		for _, h := range res.Hits {
			if strings.Contains(h.Snippet.Text, sskeys.Marker) || !strings.Contains(h.Snippet.Text, encMarker) {
				t.Fatalf("%s store: hit %s/%d shows %q", name, h.SessionID, h.Seq, h.Snippet.Text)
			}
			hits[name][fmt.Sprintf("%s/%d", h.SessionID, h.Seq)] = h.Snippet.Text
		}
		rep, err := s.CheckSearchIndex(ctx)
		if err != nil || !rep.IndexOK {
			t.Fatalf("%s store: index check %+v, %v", name, rep, err)
		}
		for _, k := range rep.Kinds {
			if k.Missing != 0 || k.Orphans != 0 || k.Items != k.Indexed {
				t.Fatalf("%s store: index check of %s: %+v", name, k.Kind, k)
			}
		}
	}
	if c, _ := enc.Conversations().Load(ctx, "c"); c.DataKeyID == "" {
		t.Fatal("the opted-in store did not import the conversation encrypted")
	}
	if len(hits["plain"]) == 0 || len(hits["opt-in"]) != len(hits["plain"]) {
		t.Fatalf("message hits: opt-in %d, plaintext %d", len(hits["opt-in"]), len(hits["plain"]))
	}
	for k, v := range hits["plain"] {
		if hits["opt-in"][k] != v {
			t.Fatalf("hit %s: opt-in store shows %q, plaintext store %q", k, hits["opt-in"][k], v)
		}
	}
}
