package sqlstore_test

// Native Go fuzz tests against a real store: no input panics; a rejected
// request is ErrInvalidInput and reaches the writer not at all (not one
// statement); an accepted one is stored exactly as returned; a refusal
// changes no counter; a replayed request id returns the first outcome and
// consumes nothing. Seed corpora: testdata/fuzz/.
//
//	go test ./sqlstore -run '^$' -fuzz '^FuzzCreate$' -fuzztime 1m

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
	"github.com/agentstore/sessionstore/store/storetest"
)

// fuzzStore opens a store for one fuzz target in this process and counts
// the statements its writer runs. Durability is not under test here.
func fuzzStore(f *testing.F) (*sqlstore.Store, *storetest.Clock, *atomic.Int64) {
	var stmts atomic.Int64
	clock := storetest.NewClock()
	st, err := sqlstore.Open(context.Background(), sqlstore.FreshDBPath(f, "fuzz.db"),
		sqlstore.WithClock(clock.Now), sqlstore.WithSynchronous(sqlstore.SyncOff),
		sqlstore.WithFaults(func(string) error { stmts.Add(1); return nil }),
		// No background indexer: its folds run statements on the writer
		// at any moment, and the targets count the statements a rejected
		// call runs (none).
		sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	return st, clock, &stmts
}

func fuzzList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

func sameJSON(t *testing.T, a, b any) {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("stored\n%s\nreturned\n%s", jb, ja)
	}
}

func FuzzCreate(f *testing.F) {
	f.Add("", "agent-1", "read the docs", "root|planner", "read_file|*", "vault:db", int64(time.Hour), int64(10), int64(5), int64(time.Minute), "internal", int64(0))
	f.Add("session/a", "agent-1", "", "", "", "", int64(0), int64(0), int64(0), int64(0), "", int64(3))
	f.Add("session/a", "agent-2", "", "", "", "", int64(0), int64(0), int64(0), int64(0), "", int64(0))
	f.Add("../../etc/passwd", "agent-1", "ü ∑ 🙂", "", "", "", int64(1), int64(1), int64(1), int64(1), "restricted", int64(1))
	f.Add("big", "agent-1", "", "", "", "", int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), "public", int64(math.MaxInt64))
	f.Add("x", "", "", "", "", "", int64(-1), int64(-1), int64(-1), int64(-1), "secret", int64(-1))
	f.Add("id\x00nul", "agent\n", "bad\x00", "a||b", "tool with space", "ü", int64(1), int64(1<<62), int64(1), int64(1), "restricted", int64(1<<62))
	st, _, stmts := fuzzStore(f)
	ctx := context.Background()
	gov := st.Governance()
	f.Fuzz(func(t *testing.T, id, agent, intent, chain, tools, creds string, timeLimit, budget, rate, window int64, sens string, maxActive int64) {
		req := store.CreateRequest{
			ID: id, AgentID: agent, DeclaredIntent: intent,
			DelegationChain: fuzzList(chain), AuthorizedTools: fuzzList(tools), AuthorizedCredentials: fuzzList(creds),
			TimeLimit: time.Duration(timeLimit), CallBudget: budget, RateLimit: rate, RateWindow: time.Duration(window),
			Sensitivity: store.Sensitivity(sens), MaxActivePerAgent: maxActive,
		}
		before := stmts.Load()
		s, err := gov.Create(ctx, req)
		switch {
		case err == nil:
			got, err := gov.Get(ctx, s.ID)
			if err != nil {
				t.Fatalf("created session %q: %v", s.ID, err)
			}
			sameJSON(t, s, got)
		case errors.Is(err, store.ErrInvalidInput):
			if n := stmts.Load() - before; n != 0 {
				t.Fatalf("rejected input ran %d statements on the writer: %v", n, err)
			}
		case errors.Is(err, store.ErrConflict):
			if id == "" {
				t.Fatalf("conflict for a generated id: %v", err)
			}
			if _, gerr := gov.Get(ctx, id); gerr != nil {
				t.Fatalf("conflict, but session %q does not exist: %v", id, gerr)
			}
		case errors.Is(err, store.ErrTooManySessions):
			n, cerr := gov.CountActive(ctx, agent)
			if cerr != nil || maxActive <= 0 || n < maxActive {
				t.Fatalf("too many sessions with %d active, cap %d (%v)", n, maxActive, cerr)
			}
		default:
			t.Fatalf("Create: unexpected error %v", err)
		}
	})
}

// useOutcome is what a request id's first Use was and returned.
type useOutcome struct {
	tools   string
	outcome string
}

func FuzzUse(f *testing.F) {
	f.Add(uint8(0), "", "agent-1", "read_file", "")
	f.Add(uint8(1), "", "agent-1", "read_file|write_file", "req-1")
	f.Add(uint8(1), "", "agent-1", "read_file|write_file", "req-1")
	f.Add(uint8(1), "", "agent-1", "read_file", "req-1")
	f.Add(uint8(1), "", "agent-2", "read_file", "req-1")
	f.Add(uint8(2), "", "", "a|b|c|d", "r")
	f.Add(uint8(3), "", "agent-1", "read_file", "")
	f.Add(uint8(4), "", "agent-2", "read_file", "")
	f.Add(uint8(5), "missing", "agent-1", "", "")
	f.Add(uint8(5), "", "", "", "")
	f.Add(uint8(5), "s\x7f", "a\x00", "bad tool", "r\n")
	st, clock, stmts := fuzzStore(f)
	ctx := context.Background()
	gov := st.Governance()
	ids := []string{"any", "list", "small", "closed", "expired"}
	for _, r := range []store.CreateRequest{
		{ID: "any", AgentID: "agent-1", AuthorizedTools: []string{"*"}, CallBudget: 1 << 40, TimeLimit: 1000 * time.Hour},
		{ID: "list", AgentID: "agent-1", AuthorizedTools: []string{"read_file", "write_file", "a"}, CallBudget: 1 << 40, RateLimit: 1 << 30, TimeLimit: 1000 * time.Hour},
		{ID: "small", AgentID: "agent-1", AuthorizedTools: []string{"*"}, CallBudget: 3, TimeLimit: 1000 * time.Hour},
		{ID: "closed", AgentID: "agent-1", AuthorizedTools: []string{"*"}, CallBudget: 10, TimeLimit: 1000 * time.Hour},
		{ID: "expired", AgentID: "agent-1", AuthorizedTools: []string{"*"}, CallBudget: 10, TimeLimit: time.Second},
	} {
		if _, err := gov.Create(ctx, r); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := gov.Close(ctx, "closed"); err != nil {
		f.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	seen := map[string]useOutcome{} // by session and request id
	f.Fuzz(func(t *testing.T, pick uint8, sid, agent, tools, reqID string) {
		if int(pick)%(len(ids)+1) < len(ids) {
			sid = ids[int(pick)%(len(ids)+1)]
		}
		req := store.UseRequest{SessionID: sid, AgentID: agent, Tools: fuzzList(tools), RequestID: reqID}
		prev, perr := gov.Get(ctx, sid)
		before := stmts.Load()
		_, err := gov.Use(ctx, req)
		if errors.Is(err, store.ErrInvalidInput) {
			if n := stmts.Load() - before; n != 0 {
				t.Fatalf("rejected input ran %d statements on the writer: %v", n, err)
			}
			return
		}
		out := outcomeOf(err)
		if strings.HasPrefix(out, "error") {
			t.Fatalf("Use: unexpected error %v", err)
		}
		if perr != nil {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Use of a session Get cannot find (%v): %v", perr, err)
			}
			return
		}
		cur, gerr := gov.Get(ctx, sid)
		if gerr != nil {
			t.Fatal(gerr)
		}
		delta := cur.CallsMade - prev.CallsMade
		key := sid + "\x00" + reqID
		first, replay := seen[key]
		replay = replay && reqID != ""
		switch {
		case err != nil && delta != 0:
			t.Fatalf("refusal %v consumed %d", err, delta)
		case err == nil && replay && delta != 0:
			t.Fatalf("replay of %q consumed %d", reqID, delta)
		case err == nil && !replay && delta != int64(len(req.Tools)):
			t.Fatalf("success consumed %d, want %d", delta, len(req.Tools))
		}
		switch {
		case !replay:
			if reqID != "" && !errors.Is(err, store.ErrAgentMismatch) {
				seen[key] = useOutcome{tools, out}
			}
		case agent != "" && agent != prev.AgentID:
			if !errors.Is(err, store.ErrAgentMismatch) {
				t.Fatalf("replay by another agent: %v", err)
			}
		case tools != first.tools:
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("request id reused with other tools: %v", err)
			}
		case out != first.outcome:
			t.Fatalf("replay of %q returned %s, first %s", reqID, out, first.outcome)
		}
	})
}

func FuzzAppendMessages(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"type":"text","text":"hi"}]`,
		`[{"type":"tool_use","id":"1","name":"bash","input":{"cmd":"ls -la","env":{"A":"1"}}}]`,
		`[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"x"}],"is_error":true}]`,
		`[{"type":"image","source":{"type":"base64","data":"AA=="}},{"type":"text","text":"\u00e9\n"}]`,
		`[{"type":""}]`, `[null]`, `{"type":"text"}`, `not json`, `{"a":`, `[{"type":"x","extra":1e999}]`,
	} {
		f.Add(uint8(0), "user", []byte(s))
	}
	f.Add(uint8(1), "assistant", []byte(`[{"type":"reasoning","text":"hmm"}]`))
	f.Add(uint8(2), "user", []byte(`[{"type":"text","text":"to a missing conversation"}]`))
	f.Add(uint8(0), "", []byte(`[]`))
	f.Add(uint8(0), "bad role", []byte(`[]`))
	f.Add(uint8(0), "user\x00", []byte(`[]`))
	st, _, stmts := fuzzStore(f)
	ctx := context.Background()
	conv := st.Conversations()
	for _, id := range []string{"c0", "c1"} {
		if _, err := conv.Save(ctx, store.NewConversation(id)); err != nil {
			f.Fatal(err)
		}
	}
	ids := []string{"c0", "c1", "missing"}
	f.Fuzz(func(t *testing.T, pick uint8, role string, content []byte) {
		id := ids[int(pick)%len(ids)]
		msg := store.Message{Role: role}
		if err := json.Unmarshal(content, &msg.Content); err != nil {
			// Not a block array: carry the bytes as a tool input, which
			// must be valid JSON to be stored.
			msg.Content = []store.ContentBlock{{Type: store.BlockToolUse, ID: "t", Name: "n", Input: json.RawMessage(content)}}
		}
		var before int64
		if id != "missing" {
			n, err := conv.MessageCount(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			before = n
		}
		stmtsBefore := stmts.Load()
		res, err := conv.AppendMessages(ctx, id, msg)
		switch {
		case errors.Is(err, store.ErrInvalidInput):
			if n := stmts.Load() - stmtsBefore; n != 0 {
				t.Fatalf("rejected message ran %d statements on the writer: %v", n, err)
			}
			if id != "missing" {
				if n, _ := conv.MessageCount(ctx, id); n != before {
					t.Fatalf("rejected message changed the count from %d to %d", before, n)
				}
			}
			return
		case errors.Is(err, store.ErrNotFound):
			if id != "missing" {
				t.Fatalf("append to %s: %v", id, err)
			}
			return
		case err != nil:
			t.Fatalf("append: unexpected error %v", err)
		case id == "missing":
			t.Fatal("append to a missing conversation succeeded")
		}
		if res.FirstSeq != before || res.MessageCount != before+1 {
			t.Fatalf("append result %+v after %d messages", res, before)
		}
		got, err := conv.Messages(ctx, id, res.FirstSeq, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("read back: %v, %d messages", err, len(got))
		}
		sent := msg.Content
		if sent == nil {
			sent = []store.ContentBlock{} // stored as []
		}
		want, err := json.Marshal(sent)
		if err != nil {
			t.Fatalf("stored content does not encode: %v", err)
		}
		have, err := json.Marshal(got[0].Content)
		if err != nil {
			t.Fatalf("read-back content does not encode: %v", err)
		}
		if got[0].Role != role || got[0].Seq != res.FirstSeq || string(have) != string(want) {
			t.Fatalf("read back %q %d %s, appended %q %d %s", got[0].Role, got[0].Seq, have, role, res.FirstSeq, want)
		}
	})
}

func FuzzImportA3S(f *testing.F) {
	for _, name := range []string{"coding-session.json", "legacy-todos.json", "delegated-child.json", "errored.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "a3s", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"session/a","llm_config":{"provider":"p","model":"m","api_key":"sk-fuzz-secret-0123456789"}}`))
	f.Add([]byte(`{"id":"x","todos":[{"id":"1","description":"d","status":"pending"}]}`))
	f.Add([]byte(`{"id":"x","messages":[{"role":"user","content":[{"type":"tool_result","content":[1,{"a":null}]}]}]}`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`{"id":"x"} {"id":"y"}`))
	f.Add([]byte(`[]`))
	st, _, _ := fuzzStore(f)
	dbPath := st.Path()
	ctx := context.Background()
	conv := st.Conversations()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := a3s.Decode(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, store.ErrInvalidInput) {
				t.Fatalf("decode error %v is not ErrInvalidInput", err)
			}
			return
		}
		// The API key must not reach the files. It is looked for only when
		// it is long enough to be told apart, and neither the files nor the
		// rest of the conversation hold it already.
		var key []byte
		if c.LLMConfig != nil && len(c.LLMConfig.APIKey) >= 8 {
			key = []byte(c.LLMConfig.APIKey)
			if doc, _ := json.Marshal(c); bytes.Contains(doc, key) || filesContain(dbPath, key) {
				key = nil
			}
		}
		if _, err := conv.Save(ctx, c); err != nil {
			t.Fatalf("a decoded a3s file does not save: %v", err)
		}
		if key != nil && filesContain(dbPath, key) {
			t.Fatalf("the API key %q was written to the database files", key)
		}
		got, err := conv.Load(ctx, c.ID)
		if err != nil {
			t.Fatalf("load %q: %v", c.ID, err)
		}
		want, err := a3s.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		have, err := a3s.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Fatalf("stored conversation exports\n%s\nthe import exports\n%s", have, want)
		}
		// Keep the file small: the key scan reads all of it.
		if err := conv.Delete(ctx, c.ID); err != nil {
			t.Fatalf("delete %q: %v", c.ID, err)
		}
	})
}

// filesContain reports whether the database at path or its WAL holds b.
func filesContain(path string, b []byte) bool {
	for _, suffix := range []string{"", "-wal"} {
		data, _ := os.ReadFile(path + suffix)
		if bytes.Contains(data, b) {
			return true
		}
	}
	return false
}
