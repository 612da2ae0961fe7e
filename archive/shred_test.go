package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// The deleting process of TestShreddedKeyStaysShredded: the test binary
// run again with these variables set opens the store at shredDB with the
// KEKs of shredKEK and deletes the agent session shredSession.
const (
	shredDB      = "ARCHIVE_TEST_SHRED_DB"
	shredKEK     = "ARCHIVE_TEST_SHRED_KEK"
	shredSession = "ARCHIVE_TEST_SHRED_SESSION"
)

var shredKey = func(session string) store.SessionKey {
	return store.SessionKey{App: "app", User: "u", Session: session}
}

// deleteIn opens the store at db with the KEKs kekText (its keyring is
// the default one beside it) and deletes the agent session named
// session, which shreds its data key.
func deleteIn(db, kekText, session string) error {
	ctx := context.Background()
	kek, err := sskeys.Parse(kekText)
	if err != nil {
		return err
	}
	st, err := sqlstore.Open(ctx, db, sqlstore.WithKeyProvider(kek))
	if err != nil {
		return err
	}
	defer st.Close()
	return st.AgentSessions().DeleteSession(ctx, shredKey(session))
}

// runShredHelper is TestMain's branch for the deleting process.
func runShredHelper() (bool, error) {
	db := os.Getenv(shredDB)
	if db == "" {
		return false, nil
	}
	return true, deleteIn(db, os.Getenv(shredKEK), os.Getenv(shredSession))
}

// TestShreddedKeyStaysShredded (issue 37, item 1): a keyring opened
// before a session's delete, which exported the session and so holds its
// data key in memory, must not hand that key out after the delete shred
// it, whether the delete ran through another keyring of this process or
// in another process: importing the export with it fails with
// ErrKeyShredded and writes nothing. It used to succeed, the plaintext
// re-keyed into the destination.
func TestShreddedKeyStaysShredded(t *testing.T) {
	for _, where := range []string{"same_process", "other_process"} {
		t.Run(where, func(t *testing.T) {
			ctx := t.Context()
			line, err := sskeys.GenerateEntry("v1")
			must(t, err)
			kek, err := sskeys.Parse(line)
			must(t, err)
			db := sqltest.FreshPath(t, "src.db")
			st, err := sqlstore.Open(ctx, db, sqlstore.WithKeyProvider(kek))
			must(t, err)
			defer st.Close()
			_, err = st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: shredKey("s"),
				State: store.ScopedState{Session: map[string]json.RawMessage{"secret": json.RawMessage(`"kept"`)}}})
			must(t, err)
			_, err = st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: shredKey("s"),
				Event: store.AgentEvent{ID: "e1", Data: json.RawMessage(`{"text":"secret words"}`)}})
			must(t, err)

			// The user's own keyring on the store's directory.
			ring, err := sskeys.OpenRing(sskeys.RingDir(db), kek, sskeys.RingOptions{})
			must(t, err)
			exp := filepath.Join(t.TempDir(), "export.json")
			_, err = archive.ExportFile(ctx, st, exp, archive.ExportOptions{Keys: ring})
			must(t, err)

			if where == "same_process" {
				must(t, st.AgentSessions().DeleteSession(ctx, shredKey("s")))
			} else {
				must(t, st.Close())
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), shredDB+"="+db, shredKEK+"="+line, shredSession+"=s")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("deleting process: %v\n%s", err, out)
				}
			}
			ids, err := ring.IDs()
			must(t, err)
			if len(ids) != 0 {
				t.Fatalf("the delete left keys %v", ids)
			}

			dst, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "dst.db"))
			must(t, err)
			defer dst.Close()
			_, err = archive.ImportFile(ctx, dst, exp, archive.ImportOptions{Keys: ring})
			if !errors.Is(err, store.ErrKeyShredded) {
				t.Fatalf("import with the keyring opened before the delete: %v, want ErrKeyShredded", err)
			}
			var ke *store.KeyError
			if !errors.As(err, &ke) || ke.KeyID == "" || ke.Ring != sskeys.RingDir(db) {
				t.Fatalf("key error details: %+v", ke)
			}
			if _, err := dst.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: shredKey("s")}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the refused import wrote the session: %v", err)
			}
			// A keyring opened after the delete says the same.
			fresh, err := sskeys.OpenRing(sskeys.RingDir(db), kek, sskeys.RingOptions{})
			must(t, err)
			if _, err := archive.ImportFile(ctx, dst, exp, archive.ImportOptions{Keys: fresh}); !errors.Is(err, store.ErrKeyShredded) {
				t.Fatalf("import with a keyring opened after the delete: %v, want ErrKeyShredded", err)
			}
		})
	}
}

// TestImportKeyAbsent (issue 37, item 3): importing an encrypted export
// with a keyring that never held its key says the key is not in that
// keyring (ErrKeyAbsent, naming the key and the keyring), not that it
// was shredded.
func TestImportKeyAbsent(t *testing.T) {
	ctx := t.Context()
	line, err := sskeys.GenerateEntry("v1")
	must(t, err)
	kek, err := sskeys.Parse(line)
	must(t, err)
	db := sqltest.FreshPath(t, "src.db")
	st, err := sqlstore.Open(ctx, db, sqlstore.WithKeyProvider(kek))
	must(t, err)
	defer st.Close()
	_, err = st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: shredKey("s")})
	must(t, err)
	c := store.NewConversation("c")
	c.Messages = []store.Message{store.UserMessage("hello")}
	_, err = st.Conversations().Save(ctx, c)
	must(t, err)
	srcRing, err := sskeys.OpenRing(sskeys.RingDir(db), kek, sskeys.RingOptions{})
	must(t, err)
	exp := filepath.Join(t.TempDir(), "export.json")
	_, err = archive.ExportFile(ctx, st, exp, archive.ExportOptions{Keys: srcRing})
	must(t, err)

	otherDir := t.TempDir()
	other, err := sskeys.OpenRing(otherDir, kek, sskeys.RingOptions{})
	must(t, err)
	dst, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "dst.db"), sqlstore.WithKeyRing(other))
	must(t, err)
	defer dst.Close()
	_, err = archive.ImportFile(ctx, dst, exp, archive.ImportOptions{Keys: other})
	if !errors.Is(err, store.ErrKeyAbsent) || errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("import with another store's keyring: %v, want ErrKeyAbsent", err)
	}
	var ke *store.KeyError
	if !errors.As(err, &ke) || ke.Ring != otherDir {
		t.Fatalf("key error details: %+v", ke)
	}
	srcIDs, err := srcRing.IDs()
	must(t, err)
	found := false
	for _, id := range srcIDs {
		found = found || id == ke.KeyID
	}
	if !found {
		t.Fatalf("the error names key %q, not one of the export's %v", ke.KeyID, srcIDs)
	}
	if ids, _ := other.IDs(); len(ids) != 0 {
		t.Fatalf("the refused import left keys %v in the destination's keyring", ids)
	}
	// With the exporting store's keyring it imports.
	if _, err := archive.ImportFile(ctx, dst, exp, archive.ImportOptions{Keys: srcRing}); err != nil {
		t.Fatalf("import with the exporting store's keyring: %v", err)
	}
}

// TestDryRunChecksTheStore (issue 37, item 17): a dry run with a store
// meets the conflict the import meets (it checked the file alone and
// reported success), counts existing records as skipped with
// SkipExisting, changes nothing, and leaves no data key of the records
// it checked in an encrypting store's keyring; on both backends.
func TestDryRunChecksTheStore(t *testing.T) {
	line, err := sskeys.GenerateEntry("v1")
	must(t, err)
	kek, err := sskeys.Parse(line)
	must(t, err)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			open := func(ring store.KeyRing) archive.Store {
				var st interface {
					archive.Store
					Close() error
				}
				var err error
				switch {
				case kind == "sqlite" && ring != nil:
					st, err = sqlstore.Open(ctx, sqltest.FreshPath(t, "s.db"), sqlstore.WithKeyRing(ring))
				case kind == "sqlite":
					st, err = sqlstore.Open(ctx, sqltest.FreshPath(t, "s.db"))
				case ring != nil:
					st, err = pgstore.Open(ctx, pgtest.NewStore(t), pgstore.WithKeyRing(ring))
				default:
					st, err = pgstore.Open(ctx, pgtest.NewStore(t))
				}
				must(t, err)
				t.Cleanup(func() { st.Close() })
				return st
			}
			src := open(nil)
			_, err := src.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: shredKey("s")})
			must(t, err)
			c := store.NewConversation("c")
			c.Messages = []store.Message{store.UserMessage("hello")}
			_, err = src.Conversations().Save(ctx, c)
			must(t, err)
			exp := filepath.Join(t.TempDir(), "export.json")
			_, err = archive.ExportFile(ctx, src, exp, archive.ExportOptions{})
			must(t, err)

			// Into the store that holds the records: the conflict.
			_, err = archive.ImportFile(ctx, src, exp, archive.ImportOptions{DryRun: true})
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("dry run into the exporting store: %v, want ErrConflict", err)
			}
			res, err := archive.ImportFile(ctx, src, exp, archive.ImportOptions{DryRun: true, SkipExisting: true})
			if err != nil || res.Skipped != 2 || res.Total() != 0 {
				t.Fatalf("dry run with SkipExisting: %+v, %v", res, err)
			}

			// Into an empty encrypting store: counted, nothing written, no
			// key left.
			ringDir := t.TempDir()
			ring, err := sskeys.OpenRing(ringDir, kek, sskeys.RingOptions{})
			must(t, err)
			dst := open(ring)
			res, err = archive.ImportFile(ctx, dst, exp, archive.ImportOptions{DryRun: true})
			if err != nil || res.Conversations != 1 || res.AgentSessions != 1 {
				t.Fatalf("dry run into an empty store: %+v, %v", res, err)
			}
			if ok, err := dst.Conversations().Exists(ctx, "c"); err != nil || ok {
				t.Fatalf("the dry run wrote the conversation: %v, %v", ok, err)
			}
			if ids, err := ring.IDs(); err != nil || len(ids) != 0 {
				t.Fatalf("the dry run left keys %v, %v", ids, err)
			}
			// The import itself then writes them, keys and all.
			if _, err := archive.ImportFile(ctx, dst, exp, archive.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			if ids, _ := ring.IDs(); len(ids) != 2 {
				t.Fatalf("after the import the keyring holds %v", ids)
			}
		})
	}
}
