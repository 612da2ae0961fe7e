package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// rowPrompt and rowTask are the marked session data of
// testConvEncRowSealed's conversations.
var (
	rowPrompt = encMarker + " system prompt"
	rowTask   = store.Task{ID: "t1", Content: encMarker + " task", Status: store.TaskPending, Priority: store.PriorityHigh}
)

// saveMarkedRow saves conversation id with the marked system prompt,
// task and security configuration.
func (e *encEnv) saveMarkedRow(st store.Store, id string) {
	e.t.Helper()
	c := store.NewConversation(id)
	c.Config.Name = "name of " + id
	c.Config.SystemPrompt = rowPrompt
	c.Tasks = []store.Task{rowTask}
	c.Config.SecurityConfig = json.RawMessage(`{"note":"` + encMarker + `"}`)
	c.Messages = []store.Message{store.UserMessage("hello")}
	if _, err := st.Conversations().Save(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
}

// wantRow fails t unless conversation id loads with the marked session
// data.
func (e *encEnv) wantRow(st store.Store, id string) {
	e.t.Helper()
	c, err := st.Conversations().Load(e.ctx, id)
	if err != nil {
		e.t.Fatalf("load %s: %v", id, err)
	}
	if c.Config.SystemPrompt != rowPrompt || len(c.Tasks) != 1 || !reflect.DeepEqual(c.Tasks[0], rowTask) ||
		string(c.Config.SecurityConfig) != `{"note":"`+encMarker+`"}` || c.Config.Name != "name of "+id {
		e.t.Fatalf("%s: prompt %q, tasks %+v, security %s, name %q", id, c.Config.SystemPrompt, c.Tasks,
			c.Config.SecurityConfig, c.Config.Name)
	}
}

// testConvEncRowSealed: an encrypted conversation's system prompt, tasks
// and policy documents are stored sealed (the name stays plaintext for
// listing) and read back; a fork's are sealed with the fork's own key;
// plaintext or a value of another column where a sealed value is
// expected is ErrKeyMismatch, never accepted; a row written before the
// columns were sealed (plaintext, content_sealed 0, as migration 00024
// leaves existing rows) still reads, and its next save seals it.
func testConvEncRowSealed(t *testing.T, h Harness) {
	if raceEnabled {
		// No concurrency here, and ~12 s per backend under the race
		// detector: the run without it covers it (CI time).
		t.Skip("covered by the run without the race detector")
	}
	if h.Exec == nil || h.Count == nil {
		t.Skip("needs Exec and Count")
	}
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	count := func(q string) int64 {
		t.Helper()
		n, err := h.Count(e.ctx, e.loc, q)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	exec := func(q string) {
		t.Helper()
		if err := h.Exec(e.ctx, e.loc, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"c", "c2", "old"} {
		e.saveMarkedRow(st, id)
		e.wantRow(st, id)
	}
	sealedRow := func(id string) int64 {
		t.Helper()
		return count(`SELECT count(*) FROM conversations WHERE id = '` + id + `' AND content_sealed = 1
			AND system_prompt NOT LIKE '%` + encMarker + `%' AND tasks NOT LIKE '%` + encMarker + `%'
			AND security_config NOT LIKE '%` + encMarker + `%' AND name = 'name of ` + id + `'`)
	}
	if sealedRow("c") != 1 {
		t.Fatal("the conversation's session data is not stored sealed (or its name is not plaintext)")
	}
	// Listing needs no key.
	if info, err := e.open(nil).Conversations().Info(e.ctx, "c"); err != nil || info.Name != "name of c" {
		t.Fatalf("info without the keyring: %+v, %v", info, err)
	}

	// A fork's session data is sealed with the fork's key.
	if _, err := branches(t, st).Fork(e.ctx, store.ConversationForkRequest{ID: "c2", At: 0, NewID: "f"}); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE conversations SET name = 'name of f' WHERE id = 'f'`)
	e.wantRow(st, "f")
	if sealedRow("f") != 1 || count(`SELECT count(*) FROM conversations AS f JOIN conversations AS p ON p.id = 'c2'
		WHERE f.id = 'f' AND (f.system_prompt = p.system_prompt OR f.data_key = p.data_key)`) != 0 {
		t.Fatal("the fork's session data is not sealed with a key of its own")
	}

	// Plaintext where a sealed value is expected, and a sealed value of
	// another column, are refused.
	exec(`UPDATE conversations SET system_prompt = 'injected' WHERE id = 'c'`)
	if _, err := st.Conversations().Load(e.ctx, "c"); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("plaintext system prompt in a sealed row: %v, want ErrKeyMismatch", err)
	}
	exec(`UPDATE conversations SET system_prompt = tasks WHERE id = 'c2'`)
	if _, err := st.Conversations().Load(e.ctx, "c2"); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("another column's sealed value as the system prompt: %v, want ErrKeyMismatch", err)
	}

	// A row as a store before migration 00024 left it: plaintext session
	// data of an encrypted conversation (its messages sealed).
	exec(`UPDATE conversations SET content_sealed = 0, system_prompt = '` + rowPrompt + `',
		tasks = '[{"id":"t1","content":"` + encMarker + ` task","status":"pending","priority":"high"}]',
		security_config = '{"note":"` + encMarker + `"}' WHERE id = 'old'`)
	e.wantRow(st, "old")
	// Such a row with a sealed value in it is refused too.
	exec(`UPDATE conversations SET content_sealed = 0, system_prompt = (SELECT tasks FROM conversations WHERE id = 'f') WHERE id = 'c2'`)
	if _, err := st.Conversations().Load(e.ctx, "c2"); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("a sealed value in a plaintext row: %v, want ErrKeyMismatch", err)
	}
	// Its next save seals it.
	old, err := st.Conversations().Load(e.ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	old.Version = 0
	if _, err := st.Conversations().Save(e.ctx, old); err != nil {
		t.Fatal(err)
	}
	if sealedRow("old") != 1 {
		t.Fatal("a save of an old plaintext row did not seal it")
	}
	e.wantRow(st, "old")

	// A store without a keyring writes plaintext rows and reads them.
	plain := e.open(nil)
	e.saveMarkedRow(plain, "p")
	e.wantRow(plain, "p")
	if count(`SELECT count(*) FROM conversations WHERE id = 'p' AND content_sealed = 0 AND system_prompt = '`+rowPrompt+`'`) != 1 {
		t.Fatal("a plaintext store's row is not plaintext")
	}
}
