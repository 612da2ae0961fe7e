package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// Encryption at rest: a store opened with a key provider seals every new
// agent session with a data key of its own, kept in the keyring beside the
// database file; deleting the session shreds the key.
func ExampleWithKeyProvider() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "sessions.db")

	entry, _ := sskeys.GenerateEntry("v1") // normally read from a key file
	kek, _ := sskeys.Parse(entry)
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(kek))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	key := store.SessionKey{App: "shop", User: "alice", Session: "s1"}
	as := st.AgentSessions()
	as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key})
	as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: []byte(`{"author":"user"}`)}})

	// A store without the key refuses the session and changes nothing.
	plain, _ := sqlstore.Open(ctx, path)
	_, err = plain.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	fmt.Println("without the key:", errors.Is(err, store.ErrKeyUnavailable))
	plain.Close()

	s, _ := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	fmt.Println("with the key:", string(s.Events[0].Data))

	ring, _ := sskeys.OpenRing(sskeys.RingDir(path), kek, sskeys.RingOptions{})
	before, _ := ring.IDs()
	as.DeleteSession(ctx, key)
	after, _ := ring.IDs()
	fmt.Println("data keys before and after the delete:", len(before), len(after))
	// Output:
	// without the key: true
	// with the key: {"author":"user"}
	// data keys before and after the delete: 1 0
}
