package storetest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"testing"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// The stored form of sealed agent events, checked behind the store's
// back: format-1 text written by an earlier store opens, and a sealed
// value moved, replayed or damaged does not.

// eventRowSQL selects the agent_events row of the event evID of the
// session named session (one app and user in these tests).
func eventRowSQL(session, evID string) string {
	return `event_id = '` + evID + `' AND session_pk = (SELECT pk FROM agent_sessions WHERE session_id = '` + session + `')`
}

// sealFormat1 seals plain the way format 1 is documented (keys.Marker,
// then the unpadded standard base64 of nonce || AES-256-GCM ciphertext,
// with the row's identity as associated data), with the standard library
// only: the text of a store from before the current encoder.
func sealFormat1(t *testing.T, key []byte, plain []byte, ad ...string) string {
	t.Helper()
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, g.NonceSize())
	rand.Read(nonce)
	return keys.Marker + base64.RawStdEncoding.EncodeToString(g.Seal(nonce, nonce, plain, keys.AD(ad...)))
}

// testEncEventFormat1 writes an event's data as format-1 text through raw
// SQL and reads it back through every event read.
func testEncEventFormat1(t *testing.T, h Harness) {
	if h.Exec == nil {
		t.Skip("the harness cannot run SQL behind the store's back")
	}
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	key := encKey("s1")
	e.fill(st, key, 3)
	as := st.AgentSessions()
	got, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
	if err != nil || got.DataKeyID == "" {
		t.Fatalf("session %+v, %v; want an encrypted one", got, err)
	}
	raw, err := e.ring.Key(e.ctx, got.DataKeyID)
	if err != nil {
		t.Fatal(err)
	}
	const plain = `{"author":"user","written":"by format 1"}`
	text := sealFormat1(t, raw, []byte(plain), got.DataKeyID, "agent_events.data", strconv.Itoa(2), "ev-b")
	if err := h.Exec(e.ctx, e.loc, `UPDATE agent_events SET data = '`+text+`' WHERE `+eventRowSQL("s1", "ev-b")); err != nil {
		t.Fatal(err)
	}
	// A fresh store: nothing cached from the writes above.
	fresh := e.open(e.ring).AgentSessions()
	full, err := fresh.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(full.Events) != 3 || string(full.Events[1].Data) != plain {
		t.Fatalf("get: %+v, %v; want event 2 = %s", full.Events, err, plain)
	}
	page, err := fresh.ListEvents(e.ctx, store.ListEventsRequest{Key: key})
	if err != nil || len(page.Items) != 3 || string(page.Items[1].Data) != plain {
		t.Fatalf("list: %+v, %v", page.Items, err)
	}
	// The same text at another position is refused: the identity is
	// bound, whichever encoder wrote the text.
	if err := h.Exec(e.ctx, e.loc, `UPDATE agent_events SET data = '`+text+`' WHERE `+eventRowSQL("s1", "ev-c")); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true}); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("format-1 text moved to event 3: %v, want ErrKeyMismatch", err)
	}
}

// testEncEventsMoved moves sealed event data behind the store's back: to
// another position of its session, into another session (another data
// key), ciphertext into a plaintext session, plaintext into an encrypted
// one, and damages it. No read returns data; nothing is deleted.
func testEncEventsMoved(t *testing.T, h Harness) {
	if h.Exec == nil {
		t.Skip("the harness cannot run SQL behind the store's back")
	}
	e := newEncEnv(t, h)
	e.fill(e.open(nil), encKey("p"), 2)
	st := e.open(e.ring)
	for _, s := range []string{"a1", "a2", "b", "c"} {
		e.fill(st, encKey(s), 2)
	}
	cases := []struct{ name, query, read string }{
		{"OtherPosition", `UPDATE agent_events SET data = (SELECT data FROM agent_events WHERE ` + eventRowSQL("a1", "ev-b") + `) WHERE ` + eventRowSQL("a1", "ev-a"), "a1"},
		{"OtherSession", `UPDATE agent_events SET data = (SELECT data FROM agent_events WHERE ` + eventRowSQL("a2", "ev-a") + `) WHERE ` + eventRowSQL("b", "ev-a"), "b"},
		{"CiphertextInPlaintext", `UPDATE agent_events SET data = (SELECT data FROM agent_events WHERE ` + eventRowSQL("a2", "ev-a") + `) WHERE ` + eventRowSQL("p", "ev-a"), "p"},
		{"PlaintextInEncrypted", `UPDATE agent_events SET data = '{"author":"user"}' WHERE ` + eventRowSQL("a2", "ev-b"), "a2"},
		{"Damaged", `UPDATE agent_events SET data = data || '!!' WHERE ` + eventRowSQL("c", "ev-b"), "c"},
	}
	as := st.AgentSessions()
	for _, tc := range cases {
		if err := h.Exec(e.ctx, e.loc, tc.query); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		key := encKey(tc.read)
		_, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
		if !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("%s: get of %s: %v, want ErrKeyMismatch", tc.name, tc.read, err)
		}
		_, err = as.ListEvents(e.ctx, store.ListEventsRequest{Key: key})
		if !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("%s: list of %s: %v, want ErrKeyMismatch", tc.name, tc.read, err)
		}
		got, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
		if err != nil || got.EventCount != 2 {
			t.Fatalf("%s: after the refused reads: %+v, %v", tc.name, got, err)
		}
	}
}
