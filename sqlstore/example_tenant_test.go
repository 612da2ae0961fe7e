package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// Tenants: two tenants use the same session key without seeing or
// blocking each other, and the store itself (the default tenant) sees
// neither.
func Example_tenants() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	for _, name := range []string{"acme", "globex"} {
		tenant, err := st.Tenant(name)
		if err != nil {
			log.Fatal(err)
		}
		as := tenant.AgentSessions()
		_, err = as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
			State: store.ScopedState{Session: map[string]json.RawMessage{"customer": json.RawMessage(`"` + name + ` customer"`)}}})
		if err != nil {
			log.Fatal(err) // the same key in another tenant is no conflict
		}
	}
	acme, _ := st.Tenant("acme")
	s, err := acme.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acme reads:", string(s.State.Session["customer"]))

	_, err = st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key})
	fmt.Println("the default tenant finds it:", !errors.Is(err, store.ErrNotFound))

	_, err = st.Tenant("not a name")
	fmt.Println("a malformed tenant name is invalid input:", errors.Is(err, store.ErrInvalidInput))
	// Output:
	// acme reads: "acme customer"
	// the default tenant finds it: false
	// a malformed tenant name is invalid input: true
}
