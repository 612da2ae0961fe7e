package archive_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// rowMarker is the distinctive plaintext of the sealed session data
// TestSealedConversationSessionData exports.
const rowMarker = "PLATYPUS-ROW-8841"

// TestSealedConversationSessionData exports an encrypted conversation
// whose system prompt, task and policy documents hold a marker, from
// each backend to the other with keyrings: the export holds no marker
// (they travel in the conversation's sealed value), and the import
// reads them back, into a store that seals them again.
func TestSealedConversationSessionData(t *testing.T) {
	if raceEnabled {
		// No concurrency here, and ~7 s under the race detector: the run
		// without it covers it (CI time).
		t.Skip("covered by the run without the race detector")
	}
	l, err := sskeys.GenerateEntry("v1")
	must(t, err)
	kek, err := sskeys.Parse(l)
	must(t, err)
	encrypted := func(t *testing.T, kind string) (archive.Store, store.KeyRing) {
		ring, err := sskeys.OpenRing(t.TempDir(), kek, sskeys.RingOptions{})
		must(t, err)
		var st interface {
			archive.Store
			Close() error
		}
		if kind == "sqlite" {
			st, err = sqlstore.Open(t.Context(), sqltest.FreshPath(t, "s.db"), sqlstore.WithKeyRing(ring))
		} else {
			st, err = pgstore.Open(t.Context(), pgtest.NewStore(t), pgstore.WithKeyRing(ring))
		}
		must(t, err)
		t.Cleanup(func() { st.Close() })
		return st, ring
	}
	task := store.Task{ID: "t1", Content: rowMarker + " task", Status: store.TaskPending, Priority: store.PriorityLow}
	for _, hop := range [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}} {
		t.Run(hop[0]+"_"+hop[1], func(t *testing.T) {
			src, srcRing := encrypted(t, hop[0])
			c := store.NewConversation("c")
			c.Config.Name = "listed name"
			c.Config.SystemPrompt = rowMarker + " prompt"
			c.Config.PermissionPolicy = json.RawMessage(`{"allow":"` + rowMarker + `"}`)
			c.Tasks = []store.Task{task}
			c.Messages = []store.Message{store.UserMessage("hi")}
			_, err := src.Conversations().Save(t.Context(), c)
			must(t, err)
			var doc bytes.Buffer
			_, err = archive.Export(t.Context(), src, &doc, archive.ExportOptions{Keys: srcRing})
			must(t, err)
			if bytes.Contains(doc.Bytes(), []byte(rowMarker)) {
				t.Fatal("the export holds the sealed session data in plaintext")
			}
			if !bytes.Contains(doc.Bytes(), []byte("listed name")) {
				t.Fatal("the export lacks the conversation's plaintext name")
			}
			dst, _ := encrypted(t, hop[1])
			_, err = archive.Import(t.Context(), dst, bytes.NewReader(doc.Bytes()), archive.ImportOptions{Keys: srcRing})
			must(t, err)
			got, err := dst.Conversations().Load(t.Context(), "c")
			must(t, err)
			if got.DataKeyID == "" || got.Config.SystemPrompt != c.Config.SystemPrompt || got.Config.Name != "listed name" ||
				string(got.Config.PermissionPolicy) != string(c.Config.PermissionPolicy) ||
				len(got.Tasks) != 1 || !reflect.DeepEqual(got.Tasks[0], task) {
				t.Fatalf("imported: key %q, config %+v, tasks %+v", got.DataKeyID, got.Config, got.Tasks)
			}
		})
	}
}
