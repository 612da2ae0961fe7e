package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// Encryption at rest: the behaviour every backend shares through
// store.KeyRing (the keyring is shared code, package keys). The byte scans
// of database files are the SQLite backend's (sqlstore).

// Environment variables that give a helper process the keyring of an
// encrypted harness (see Encrypted).
const (
	envKeyringDir = "STORETEST_HELPER_KEYRING_DIR"
	envKeyringKEK = "STORETEST_HELPER_KEYRING_KEK"
)

// Encrypted returns h opening every store with a directory keyring at dir
// whose data keys are wrapped by the KEKs of kekText (keys.Parse). Helper
// processes get the same keyring.
func Encrypted(t testing.TB, h Harness, dir, kekText string) Harness {
	t.Helper()
	ring := openRing(t, dir, kekText)
	e := h
	e.Open = func(ctx context.Context, loc string, clock store.Clock) (store.Store, error) {
		return h.OpenWith(ctx, loc, clock, Options{Keys: ring})
	}
	e.OpenWith = func(ctx context.Context, loc string, clock store.Clock, o Options) (store.Store, error) {
		o.Keys = ring
		return h.OpenWith(ctx, loc, clock, o)
	}
	e.keyringDir, e.keyringKEK = dir, kekText
	return e
}

// encryptedHelper is RunHelperProcess's harness: h with the parent's
// keyring when it passed one.
func encryptedHelper(h Harness) (Harness, error) {
	dir := os.Getenv(envKeyringDir)
	if dir == "" {
		return h, nil
	}
	p, err := keys.Parse(os.Getenv(envKeyringKEK))
	if err != nil {
		return h, err
	}
	ring, err := keys.OpenRing(dir, p, keys.RingOptions{})
	if err != nil {
		return h, err
	}
	e := h
	e.Open = func(ctx context.Context, loc string, clock store.Clock) (store.Store, error) {
		return h.OpenWith(ctx, loc, clock, Options{Keys: ring})
	}
	e.OpenWith = func(ctx context.Context, loc string, clock store.Clock, o Options) (store.Store, error) {
		o.Keys = ring
		return h.OpenWith(ctx, loc, clock, o)
	}
	return e, nil
}

func openRing(t testing.TB, dir, kekText string) *keys.Ring {
	t.Helper()
	p, err := keys.Parse(kekText)
	if err != nil {
		t.Fatal(err)
	}
	r, err := keys.OpenRing(dir, p, keys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kekText returns a key-file text with versions named by names, each a
// fresh random KEK; the last is current.
func kekText(t testing.TB, names ...string) string {
	t.Helper()
	var lines []string
	for _, n := range names {
		l, err := keys.GenerateEntry(n)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// RunEncryption runs the encryption tests, and the agent-session and
// branch suites on an encrypted store.
func RunEncryption(t *testing.T, h Harness) {
	if h.OpenWith == nil {
		t.Fatal("storetest: encryption needs a harness with OpenWith")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"SealedRoundTrip", testEncRoundTrip},
		{"WithoutKeyRefusesAndChangesNothing", testEncNoKey},
		{"WrongKeyIsAnErrorNeverADeletion", testEncWrongKey},
		{"MissingKeyFileIsShredded", testEncMissingKeyFile},
		{"DeleteShredsTheKey", testEncDeleteShreds},
		{"ForkKeepsParentKeyUntilPruned", testEncForkKeepsParentKey},
		{"RetentionSweepShredsTheKey", testEncSweepShreds},
		{"RotatedKeysReadAfterOldKEKIsGone", testEncRotated},
		{"PlaintextStoreReadsItsOwnSessions", testEncMixed},
		{"EventFormat1TextOpens", testEncEventFormat1}, // encryption_events.go
		{"EventsMovedOrDamagedAreRefused", testEncEventsMoved},
		{"RuntimeSealedRoundTrip", testEncRuntimeRoundTrip}, // encryption_runtime.go
		{"RuntimeWithoutKeyRefusesAndChangesNothing", testEncRuntimeNoKey},
		{"RuntimeWrongKeyIsAnErrorNeverADeletion", testEncRuntimeWrongKey},
		{"RuntimeRemoveShredsTheKey", testEncRuntimeRemoveShreds},
		{"UploadsNeverSharedAcrossEncryptedSessions", testEncUploadSharing},
		{"UploadsConcurrentInEncryptedSessions", testEncUploadsConcurrent},
		{"KeysGCCollectsOrphansNeverNamedKeys", testEncKeysGC}, // encryption_keysgc.go
		{"KeysGCSafeAgainstConcurrentCreates", testEncKeysGCConcurrentCreates},
		{"SearchOptInIndexesEncryptedContent", testEncSearchOptIn}, // encryption_search.go
	}
	tests = append(tests, convEncTests...) // conv_encryption.go
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
	if raceEnabled || testing.Short() {
		// The two suites again on an encrypted store take ~17 s of a
		// 2-core machine without the race detector and many times that
		// with it: the race run leaves them to test.sh's run without it,
		// and go test -short (the edit-test loop) to go test without it.
		return
	}
	t.Run("AgentSessionsEncrypted", func(t *testing.T) {
		RunAgentSessions(t, Encrypted(t, h, t.TempDir(), kekText(t, "v1")))
	})
	t.Run("AgentBranchesEncrypted", func(t *testing.T) {
		RunAgentBranches(t, Encrypted(t, h, t.TempDir(), kekText(t, "v1")))
	})
	t.Run("ConversationsEncrypted", func(t *testing.T) {
		RunConversations(t, Encrypted(t, h, t.TempDir(), kekText(t, "v1")))
	})
	t.Run("ConversationBranchesEncrypted", func(t *testing.T) {
		RunConversationBranches(t, Encrypted(t, h, t.TempDir(), kekText(t, "v1")))
	})
}

// encEnv is a database with a keyring beside it.
type encEnv struct {
	t     *testing.T
	h     Harness
	loc   string
	dir   string
	kek   string
	ring  *keys.Ring
	clock *Clock
	ctx   context.Context
}

func newEncEnv(t *testing.T, h Harness) *encEnv {
	e := &encEnv{t: t, h: h, loc: h.NewLocation(t), dir: t.TempDir(), kek: kekText(t, "v1"),
		clock: NewClock(), ctx: context.Background()}
	e.ring = openRing(t, e.dir, e.kek)
	return e
}

// open opens a store with ring (nil: without a keyring).
func (e *encEnv) open(ring store.KeyRing) store.Store {
	e.t.Helper()
	st, err := e.h.OpenWith(e.ctx, e.loc, e.clock.Now, Options{Keys: ring})
	if err != nil {
		e.t.Fatalf("open: %v", err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// encMarker is the distinctive plaintext of encrypted sessions' content.
const encMarker = "ZEBRA-MARKER-7731"

// fill creates a session with state and n events whose content holds the
// marker, and returns its key.
func (e *encEnv) fill(st store.Store, key store.SessionKey, n int) {
	e.t.Helper()
	as := st.AgentSessions()
	_, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key, State: store.ScopedState{
		Session: map[string]json.RawMessage{"secret": raw(encMarker + "-initial")}}})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range n {
		_, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: "ev-" + string(rune('a'+i)), Data: raw(map[string]any{
				"author": "user", "content": map[string]any{"parts": []any{map[string]any{"text": encMarker + " event"}}}})},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"secret": raw(encMarker + "-delta")}}})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

func encKey(name string) store.SessionKey {
	return store.SessionKey{App: "enc-app", User: "enc-user", Session: name}
}

func testEncRoundTrip(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	key := encKey("s1")
	e.fill(st, key, 3)
	got, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 || !strings.Contains(string(got.Events[2].Data), encMarker) {
		t.Fatalf("events %+v", got.Events)
	}
	if string(got.State.Session["secret"]) != string(raw(encMarker+"-delta")) {
		t.Fatalf("state %s", got.State.Session["secret"])
	}
	ids, err := e.ring.IDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("keyring holds %v (%v), want one data key", ids, err)
	}
	page, err := st.AgentSessions().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: key.App})
	if err != nil || len(page.Items) != 1 || string(page.Items[0].State.Session["secret"]) != string(raw(encMarker+"-delta")) {
		t.Fatalf("list %+v, %v", page.Items, err)
	}
	evs, err := st.AgentSessions().ListEvents(e.ctx, store.ListEventsRequest{Key: key})
	if err != nil || len(evs.Items) != 3 || !strings.Contains(string(evs.Items[0].Data), encMarker) {
		t.Fatalf("list events %+v, %v", evs.Items, err)
	}
	// A replayed append compares with the opened event.
	again := got.Events[0]
	again.Seq = 0
	res, err := st.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: again})
	if err != nil || !res.Replayed {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	// Search does not index encrypted content.
	if s, ok := st.(store.Searcher); ok {
		hits, err := s.Search(e.ctx, store.SearchQuery{Query: encMarker})
		if err != nil || len(hits.Hits) != 0 {
			t.Fatalf("search found %d hits of an encrypted session (%v)", len(hits.Hits), err)
		}
		// ...and the index check does not count them as missing.
		checkIndexWhole(t, e, s)
	}
}

func testEncNoKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	key := encKey("s1")
	e.fill(e.open(e.ring), key, 2)
	plain := e.open(nil)
	as := plain.AgentSessions()
	_, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("get without key: %v, want ErrKeyUnavailable", err)
	}
	if _, err := as.GetState(e.ctx, key); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("state without key: %v", err)
	}
	_, err = as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: raw("plain")}})
	if !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("append without key: %v, want ErrKeyUnavailable", err)
	}
	_, err = as.UpdateState(e.ctx, store.UpdateStateRequest{Key: key, Delta: store.ScopedState{Session: map[string]json.RawMessage{"x": raw(1)}}})
	if !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("update state without key: %v, want ErrKeyUnavailable", err)
	}
	if err.Error() != store.ErrKeyUnavailable.Error() {
		t.Fatalf("error text %q is not the kind's", err.Error())
	}
	// Nothing changed: the keyed store reads the same session.
	got, err := e.open(e.ring).AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || got.EventCount != 2 || len(got.Events) != 2 || got.State.Session["x"] != nil {
		t.Fatalf("after refusals: %+v, %v", got, err)
	}
}

func testEncWrongKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	key := encKey("s1")
	e.fill(e.open(e.ring), key, 2)
	wrong := openRing(t, e.dir, kekText(t, "v1")) // same version name, other key
	st := e.open(wrong)
	for range 2 {
		_, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
		if !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("wrong key: %v, want ErrKeyMismatch", err)
		}
	}
	ids, err := e.ring.IDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("keyring after wrong-key reads: %v, %v", ids, err)
	}
	got, err := e.open(openRing(t, e.dir, e.kek)).AgentSessions().GetSession(e.ctx,
		store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(got.Events) != 2 {
		t.Fatalf("right key after wrong: %+v, %v", got, err)
	}
}

func testEncMissingKeyFile(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	key := encKey("s1")
	e.fill(e.open(e.ring), key, 1)
	ids, _ := e.ring.IDs()
	if len(ids) != 1 {
		t.Fatalf("keys %v", ids)
	}
	if err := os.Remove(filepath.Join(e.dir, ids[0])); err != nil {
		t.Fatal(err)
	}
	st := e.open(openRing(t, e.dir, e.kek)) // no cached key
	_, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("missing key file: %v, want ErrKeyShredded", err)
	}
	// The rows are still there (nothing deleted): the session lists.
	page, err := st.AgentSessions().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: key.App})
	if !errors.Is(err, store.ErrKeyShredded) && (err != nil || len(page.Items) != 1) {
		t.Fatalf("list: %+v, %v", page, err)
	}
}

func testEncDeleteShreds(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fill(st, encKey("a"), 1)
	e.fill(st, encKey("b"), 1)
	ids, _ := e.ring.IDs()
	if len(ids) != 2 {
		t.Fatalf("keys %v", ids)
	}
	if err := st.AgentSessions().DeleteSession(e.ctx, encKey("a")); err != nil {
		t.Fatal(err)
	}
	left, _ := e.ring.IDs()
	if len(left) != 1 {
		t.Fatalf("after delete the keyring holds %v, want one key", left)
	}
	gone := ids[0]
	if gone == left[0] {
		gone = ids[1]
	}
	if _, err := e.ring.Key(e.ctx, gone); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("deleted session's key: %v, want ErrKeyShredded", err)
	}
	if _, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: encKey("b"), IncludeEvents: true}); err != nil {
		t.Fatalf("the other session: %v", err)
	}
}

func testEncForkKeepsParentKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	as := st.AgentSessions()
	parent := encKey("parent")
	e.fill(st, parent, 3)
	fork, err := as.Fork(e.ctx, store.ForkRequest{Key: parent, At: 2, Session: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	if string(fork.State.Session["secret"]) != string(raw(encMarker+"-delta")) {
		t.Fatalf("fork state %s", fork.State.Session["secret"])
	}
	if ids, _ := e.ring.IDs(); len(ids) != 2 {
		t.Fatalf("a fork has a data key of its own: %v", ids)
	}
	if err := as.DeleteSession(e.ctx, parent); err != nil {
		t.Fatal(err)
	}
	if ids, _ := e.ring.IDs(); len(ids) != 2 {
		t.Fatalf("the parent's key went while the fork reads its rows: %v", ids)
	}
	got, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: encKey("fork"), IncludeEvents: true})
	if err != nil || len(got.Events) != 2 || !strings.Contains(string(got.Events[1].Data), encMarker) {
		t.Fatalf("fork after the parent's delete: %+v, %v", got.Events, err)
	}
	if err := as.DeleteSession(e.ctx, encKey("fork")); err != nil {
		t.Fatal(err)
	}
	if ids, _ := e.ring.IDs(); len(ids) != 0 {
		t.Fatalf("after the last reader went the keyring holds %v", ids)
	}
}

func testEncRotated(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	key := encKey("s1")
	e.fill(e.open(e.ring), key, 2)
	v1 := e.kek
	v2 := kekText(t, "v2")
	both := openRing(t, e.dir, v1+"\n"+v2) // v2 current
	res, err := both.Rotate(e.ctx)
	if err != nil || res.Rewrapped != 1 || res.Version != "v2" {
		t.Fatalf("rotate: %+v, %v", res, err)
	}
	again, err := both.Rotate(e.ctx)
	if err != nil || again.Rewrapped != 0 || again.Current != 1 {
		t.Fatalf("second rotate: %+v, %v", again, err)
	}
	// The old KEK destroyed: only v2 remains, and everything reads.
	got, err := e.open(openRing(t, e.dir, v2)).AgentSessions().GetSession(e.ctx,
		store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(got.Events) != 2 {
		t.Fatalf("after rotation with v2 only: %+v, %v", got, err)
	}
	// A provider holding only the old version cannot unwrap.
	_, err = e.open(openRing(t, e.dir, v1)).AgentSessions().GetSession(e.ctx,
		store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("old KEK only: %v, want ErrKeyUnavailable", err)
	}
}

func testEncMixed(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	plainKey, encK := encKey("plain"), encKey("sealed")
	e.fill(e.open(nil), plainKey, 1)
	e.fill(e.open(e.ring), encK, 1)
	// The keyed store reads both; the plain one only its own.
	keyed := e.open(e.ring).AgentSessions()
	for _, k := range []store.SessionKey{plainKey, encK} {
		if _, err := keyed.GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true}); err != nil {
			t.Fatalf("keyed get %s: %v", k.Session, err)
		}
	}
	plain := e.open(nil).AgentSessions()
	if _, err := plain.GetSession(e.ctx, store.GetAgentSessionRequest{Key: plainKey, IncludeEvents: true}); err != nil {
		t.Fatalf("plain get: %v", err)
	}
	if ids, _ := e.ring.IDs(); len(ids) != 1 {
		t.Fatalf("a plaintext session has no key: %v", ids)
	}
}

func testEncSweepShreds(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fill(st, encKey("old"), 1)
	e.clock.Advance(2 * time.Hour)
	e.fill(st, encKey("new"), 1)
	rep, err := st.Retention().Sweep(e.ctx, store.SweepOptions{Policies: []store.Policy{
		{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := rep.Total(); n != 1 {
		t.Fatalf("sweep removed %d records, want the old session: %+v", n, rep)
	}
	if ids, _ := e.ring.IDs(); len(ids) != 1 {
		t.Fatalf("after the sweep the keyring holds %v, want the new session's key only", ids)
	}
	if _, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: encKey("new"), IncludeEvents: true}); err != nil {
		t.Fatalf("the kept session: %v", err)
	}
}
