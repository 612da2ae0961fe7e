package docs

import (
	"go/ast"
	"strings"
)

// snippetSetup builds what a fragment marked `setup NAME` is given, runs
// it and checks what it did (see the header of snippets_test.go). Its
// code is Go source that the harness writes into the program's main
// function, around the call of the fragment.
type snippetSetup struct {
	// imports are the import paths the setup's code uses (beside context
	// and log, always imported).
	imports []string
	// decls are top-level declarations the setup's code uses.
	decls string
	// body runs before the call, with ctx (a background context) in
	// scope: it declares a variable for every parameter of the fragment
	// but ctx, under the parameter's name. It may replace ctx (ctx, cancel
	// = context.WithCancel(ctx)).
	body string
	// result runs after the call with the fragment's error in err; empty,
	// the program fails unless err is nil.
	result string
	// after runs last: it checks, in the store, that the fragment did
	// what the guide says (a fragment that ignores its calls' errors
	// passes only if they did their work).
	after string
	// postgres: the setup needs a PostgreSQL server; the harness gives
	// the program a schema of its own in SESSIONSTORE_TEST_POSTGRES_URL,
	// and the fragment skips (fails in CI) without a server.
	postgres bool
	// args names the setup's variable for a parameter when it differs
	// from the parameter's name (a name the setup's code needs for an
	// import, as png).
	args map[string]string
}

// defaultResult fails the program when the fragment returns an error.
const defaultResult = "if err != nil {\n\tlog.Fatal(\"the snippet returned \", err)\n}\n"

// setupMain is the main function of a fragment marked setup: the setup's
// body, the call of the fragment with its parameters by name, the
// setup's result and after checks.
func setupMain(fn *ast.FuncDecl, s *snippetSetup) string {
	var args []string
	for _, field := range fn.Type.Params.List {
		for _, id := range field.Names {
			name := id.Name
			if a := s.args[id.Name]; a != "" {
				name = a
			}
			args = append(args, name)
		}
	}
	result := s.result
	if result == "" {
		result = defaultResult
	}
	var b strings.Builder
	b.WriteString("func main() {\n\tctx := context.Background()\n\t_ = ctx\n")
	b.WriteString(s.body)
	b.WriteString("\nerr := snippet(" + strings.Join(args, ", ") + ")\n")
	b.WriteString(result)
	b.WriteString(s.after)
	b.WriteString("}\n")
	b.WriteString(setupHelpers)
	if s.decls != "" {
		b.WriteString("\n" + s.decls + "\n")
	}
	return b.String()
}

// setupHelpers are in every setup's program: must returns v or ends the
// program on err (setup code), want the same as a failed check (after
// code); failf ends it with a failed check.
const setupHelpers = `
func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal("setup: ", err)
	}
	return v
}

func want[T any](v T, err error) T {
	if err != nil {
		failf("%v", err)
	}
	return v
}

func want2[T, U any](v T, w U, err error) (T, U) {
	if err != nil {
		failf("%v", err)
	}
	return v, w
}

func failf(format string, args ...any) {
	log.Fatalf("check after the snippet: "+format, args...)
}
`

// openStore opens the store of a setup: sessions.db in the program's
// working directory (a temporary one), closed when main returns.
const openStore = `st := must(sqlstore.Open(ctx, "sessions.db"))
defer st.Close()
`

// snippetSetups are the setups the documents name.
var snippetSetups = map[string]*snippetSetup{
	// docs/agent-sessions.md: an event's JSON and a value for each scope
	// of the state delta.
	"agent-append": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "encoding/json"},
		body: openStore + `eventJSON := json.RawMessage(` + "`" + `{"author":"model","content":{"parts":[{"text":"hi"}]}}` + "`" + `)
m, l, x, n := json.RawMessage(` + "`" + `"gemini-2.5"` + "`" + `), json.RawMessage(` + "`" + `"en"` + "`" + `), json.RawMessage(` + "`" + `1` + "`" + `), json.RawMessage(` + "`" + `2` + "`" + `)
`,
		after: `got := want(st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: store.SessionKey{App: "support", User: "ada", Session: "s1"}, IncludeEvents: true, Recent: 10}))
if got.EventCount != 1 || len(got.Events) != 1 || got.Events[0].ID != "e1" || got.Version != 2 {
	failf("session after the append: %d events, version %d", got.EventCount, got.Version)
}
if string(got.State.App["model"]) != ` + "`" + `"gemini-2.5"` + "`" + ` || string(got.State.User["lang"]) != ` + "`" + `"en"` + "`" + ` || string(got.State.Session["step"]) != "2" || got.State.Session["scratch"] != nil || got.State.Session["temp:scratch"] != nil {
	failf("state after the append: %+v", got.State)
}
`,
	},
	// docs/postgresql.md: the application's DATABASE_URL names the
	// server (a schema of its own); the schema is there once Open returns.
	"pg-open": {
		imports:  []string{snippetImports["pgstore"], "os"},
		postgres: true,
		body: `if err := os.Setenv("DATABASE_URL", os.Getenv("SESSIONSTORE_TEST_POSTGRES_URL")); err != nil {
	failf("DATABASE_URL: %v", err)
}
`,
		after: `pg := want(pgstore.Open(ctx, os.Getenv("DATABASE_URL")))
defer pg.Close()
if n := want(pg.Governance().CountActive(ctx, "nobody")); n != 0 {
	failf("%d active sessions in a new schema, want 0", n)
}
`,
	},
	// docs/tenants.md: a key that exists in the default tenant.
	"tenant-key": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "errors"},
		body: openStore + `key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
must(st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}))
`,
		after: `acme := want(st.Tenant("acme"))
if _, err := acme.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key}); err != nil {
	failf("the session in tenant acme: %v", err)
}
globex := want(st.Tenant("globex"))
if _, err := globex.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key}); !errors.Is(err, store.ErrNotFound) {
	failf("the key in tenant globex: %v, want ErrNotFound", err)
}
`,
	},
	// docs/history.md: an agent session of 45 events.
	"agent-history": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "encoding/json", "fmt"},
		body: openStore + `as := st.AgentSessions()
key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
must(as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}))
for i := 1; i <= 45; i++ {
	must(as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: fmt.Sprint("e", i), InvocationID: "inv-1", Data: json.RawMessage(fmt.Sprintf(` + "`" + `{"n":%d}` + "`" + `, i))}}))
}
summaryJSON := json.RawMessage(` + "`" + `{"author":"model","content":{"parts":[{"text":"the first steps, summarized"}]}}` + "`" + `)
`,
		after: `retry := want(as.GetSession(ctx, store.GetAgentSessionRequest{Key: store.SessionKey{App: "support", User: "ada", Session: "s1-retry"}}))
if retry.EventCount != 40 {
	failf("the fork holds %d events, want 40", retry.EventCount)
}
if sup := want(as.Superseded(ctx, key)); len(sup) != 1 || len(sup[0].Events) != 33 {
	failf("superseded after the rewind: %+v", sup)
}
got := want(as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true}))
if len(got.Events) == 0 || got.Events[0].Compaction == nil {
	failf("no compaction record: %d events", len(got.Events))
}
`,
	},
	// docs/history.md: a conversation c1 of 45 messages.
	"conversation-history": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "fmt"},
		body: openStore + `conv := st.Conversations()
must(conv.Save(ctx, store.NewConversation("c1")))
for i := 0; i < 45; i++ {
	must(conv.Append(ctx, store.AppendRequest{ID: "c1", Messages: []store.Message{store.UserMessage(fmt.Sprint("step ", i))}}))
}
summaryText := "the first steps, summarized"
`,
		after: `if n := want(conv.MessageCount(ctx, "c1-retry")); n != 41 {
	failf("the fork holds %d messages, want 41", n)
}
if n := want(conv.MessageCount(ctx, "c1")); n != 14 {
	failf("c1 holds %d messages after the rewind and the compaction, want 14", n)
}
tail := want(conv.SummaryTail(ctx, "c1", 100))
if tail.Summary == nil || tail.Summary.Compaction == nil {
	failf("no compaction record: %+v", tail)
}
`,
	},
	// docs/runtime.md: a small PNG and its real SHA-256.
	"runtime-png": {
		imports: []string{snippetImports["sqlstore"], "bytes", "crypto/sha256", "encoding/hex", "image", "image/png"},
		body: `var buf bytes.Buffer
if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
	log.Fatal(err)
}
pngBytes := buf.Bytes()
sum := sha256.Sum256(pngBytes)
claimedHex := hex.EncodeToString(sum[:])
`,
		args: map[string]string{"png": "pngBytes"},
		after: `st := want(sqlstore.Open(ctx, "sessions.db"))
defer st.Close()
rs := want(st.Runtime().Get(ctx, "s1"))
if rs.Overrides.Provider == nil || *rs.Overrides.Provider != "ollama.default" || rs.OwnerID != "tui-1" {
	failf("the session after the snippet: %+v", rs)
}
if rs.Turn.Running || rs.Turn.Generation != 1 {
	failf("the turn after EndTurn: %+v", rs.Turn)
}
up, content := want2(st.Runtime().ReadUpload(ctx, "s1", "img-1"))
if up.SHA256 != claimedHex || !bytes.Equal(content, pngBytes) {
	failf("the upload: %+v", up)
}
`,
	},
	// docs/console.md: a store with a conversation, a logger, a scrub
	// function and a mux; the mux then serves the console.
	"console-mux": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "io", "log/slog", "net/http", "net/http/httptest", "os", "strings"},
		body: `seed := must(sqlstore.Open(ctx, "sessions.db"))
c := store.NewConversation("session/42")
c.Config.Name = "Fix the parser"
must(seed.Conversations().Save(ctx, c))
if err := seed.Close(); err != nil {
	log.Fatal(err)
}
logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
scrub := func(s string) string { return strings.ReplaceAll(s, "sk-", "[redacted]-") }
mux := http.NewServeMux()
`,
		after: `srv := httptest.NewServer(mux)
defer srv.Close()
for _, page := range []string{"/console/", "/console/conversations/session%2F42"} {
	resp := want(http.Get(srv.URL + page))
	body := want(io.ReadAll(resp.Body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		failf("GET %s: %s\n%s", page, resp.Status, body)
	}
}
`,
	},
	// docs/change-feed.md: a conversation of three messages; show records
	// each and cancels ctx after the third, which ends the feed.
	"feed-follow": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], "errors", "slices"},
		body: openStore + `must(st.Conversations().Save(ctx, store.NewConversation("session/42")))
must(st.Conversations().Append(ctx, store.AppendRequest{ID: "session/42", Messages: []store.Message{
	store.UserMessage("one"), store.AssistantMessage("two"), store.UserMessage("three")}}))
var saved store.Position
ctx, cancel := context.WithCancel(ctx)
defer cancel()
var shown []int64
show := func(m store.Message) {
	shown = append(shown, m.Seq)
	if len(shown) == 3 {
		cancel()
	}
}
`,
		result: `if !errors.Is(err, context.Canceled) {
	log.Fatal("the snippet returned ", err, ", want context.Canceled once ctx is done")
}
`,
		after: `if !slices.Equal(shown, []int64{0, 1, 2}) {
	failf("shown %v, want the positions 0, 1, 2", shown)
}
`,
	},
	// docs/maintenance.md: a SQLite store with an active governed session
	// of agent-42, and a PostgreSQL store (a schema of its own on the
	// test server) to import into.
	"maintenance-pg": {
		imports:  []string{snippetImports["sqlstore"], snippetImports["pgstore"], snippetImports["store"], "os", "time"},
		postgres: true,
		body: openStore + `must(st.Governance().Create(ctx, store.CreateRequest{AgentID: "agent-42", AuthorizedTools: []string{"search"}, CallBudget: 10, TimeLimit: time.Hour}))
pg := must(pgstore.Open(ctx, os.Getenv("SESSIONSTORE_TEST_POSTGRES_URL")))
defer pg.Close()
`,
		after: `if n := want(pg.Governance().CountActive(ctx, "agent-42")); n != 1 {
	failf("%d active sessions of agent-42 imported into PostgreSQL, want 1", n)
}
bak := want(sqlstore.Open(ctx, "sessions.bak", sqlstore.WithReadOnly(true)))
defer bak.Close()
if n := want(bak.Governance().CountActive(ctx, "agent-42")); n != 1 {
	failf("%d active sessions of agent-42 in the backup, want 1", n)
}
`,
	},
	// docs/agent-sessions.md (adk): an agent that answers nothing.
	"adk-runner": {
		imports: []string{snippetImports["agent"], snippetImports["session"], "iter", "os"},
		body: `myAgent := must(agent.New(agent.Config{Name: "helper", Description: "says nothing",
	Run: func(agent.InvocationContext) iter.Seq2[*session.Event, error] {
		return func(func(*session.Event, error) bool) {}
	}}))
`,
		after: `if _, err := os.Stat("sessions.db"); err != nil {
	failf("the service's database: %v", err)
}
`,
	},
	// docs/agent-sessions.md (adk): a session whose handle another
	// service (another process) has overtaken by an append, so that the
	// first AppendEvent is stale and the loop decides again once.
	"adk-stale": {
		imports: []string{snippetImports["adk"], snippetImports["session"]},
		body: `svc := must(adk.Open(ctx, "sessions.db"))
defer svc.Close()
sess := must(svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "ada", SessionID: "s1"})).Session
other := must(adk.Open(ctx, "sessions.db"))
defer other.Close()
theirs := must(other.Get(ctx, &session.GetRequest{AppName: "app", UserID: "ada", SessionID: "s1"})).Session
first := session.NewEvent(ctx, "inv-0")
first.Author = "other"
if err := other.AppendEvent(ctx, theirs, first); err != nil {
	log.Fatal(err)
}
ev := session.NewEvent(ctx, "inv-1")
ev.Author = "model"
decided := 0
decideAgain := func(s session.Session, e *session.Event) *session.Event {
	decided++
	again := session.NewEvent(ctx, e.InvocationID)
	again.Author = e.Author
	return again
}
`,
		after: `if decided != 1 {
	failf("decideAgain called %d times, want 1 (the first append stale)", decided)
}
got := want(svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "ada", SessionID: "s1"})).Session
if evs := got.Events(); evs.Len() != 2 || evs.At(0).Author != "other" || evs.At(1).Author != "model" {
	failf("the session holds %d events", evs.Len())
}
`,
	},
	// docs/encryption.md: a key file written by keys.CreateFile; the
	// store the fragment opened then seals a new session with it.
	"encryption-keyfile": {
		imports: []string{snippetImports["sqlstore"], snippetImports["store"], snippetImports["keys"], "encoding/json", "errors", "os"},
		body: `kekFile := "kek"
if err := keys.CreateFile(kekFile, "v1"); err != nil {
	log.Fatal(err)
}
`,
		after: `if _, err := os.Stat("sessions.db"); err != nil {
	failf("the store the snippet opened: %v", err)
}
kek := want(keys.FromFile(kekFile))
sealed := want(sqlstore.Open(ctx, "sessions.db", sqlstore.WithKeyProvider(kek)))
key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
want(sealed.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}))
want(sealed.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: "e1", Data: json.RawMessage(` + "`" + `{"text":"secret"}` + "`" + `)}}))
if err := sealed.Close(); err != nil {
	failf("close: %v", err)
}
plain := want(sqlstore.Open(ctx, "sessions.db"))
defer plain.Close()
if _, err := plain.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true}); !errors.Is(err, store.ErrKeyUnavailable) {
	failf("a session read without the key provider: %v, want ErrKeyUnavailable", err)
}
`,
	},
}
