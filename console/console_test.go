package console_test

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

const prefix = "/console"

// newServer mounts the console under prefix on a mux of its own, as a user
// would.
func newServer(t *testing.T, st store.Store, f fixture, opt console.Options) *httptest.Server {
	t.Helper()
	opt.Prefix = prefix
	opt.ReadOnly = true
	opt.Clock = f.Clock.Now
	h, err := console.New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches path (under the server) without following redirects.
func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// pageCase is one page of the console and what its HTML and its JSON twin
// must hold.
type pageCase struct {
	path     string
	html     []string // substrings of the HTML page
	jsonKeys []string // top-level keys of the JSON twin
}

func pageCases(f fixture) []pageCase {
	esc := url.PathEscape
	ak := "app=" + f.AgentKey.App + "&user=" + f.AgentKey.User + "&session=" + f.AgentKey.Session
	return []pageCase{
		{"/", []string{"Governed sessions by status", "Cost by day of last update", `<svg id="status"`, `<svg id="decisions"`,
			"2026-01-02: 7 create, 3 use, 2 reserve, 1 settle, 1 close, 1 limits, 1 tool_not_authorized, 1 spend_limit_exceeded",
			"Recent refusals", "req-2", "o-tool_not_authorized", f.Conv},
			[]string{"stats", "top_conversations_by_cost", "spend_by_day", "recent_refusals", "uses_by_day", "decisions_by_day"}},
		{"/governed", []string{f.Governed, f.Closed, "agent-7"}, []string{"filter", "sessions"}},
		{"/governed?status=closed", []string{f.Closed}, []string{"sessions"}},
		{"/governed/" + f.Governed, []string{"Budget burn-down", `id="g-budget"`, `id="g-rate"`, `id="g-time"`, "req-0", "req-2", "o-tool_not_authorized",
			`id="spend-limits"`, "total_tokens", "10,000", "7,400", f.Reservation, `id="audit-events"`, "o-spend_limit_exceeded", "res-big"},
			[]string{"session", "effective_status", "uses", "spend", "audit"}},
		{"/conversations", []string{f.Conv, f.Child, "Fix the parser"}, []string{"conversations"}},
		{"/conversations?parent=" + url.QueryEscape(f.Conv), []string{f.Child}, []string{"conversations", "parent"}},
		{"/conversations/" + esc(f.Conv), []string{"please fix the parser", "read_file", "show all", "Trace timeline", "artifact://out/1", f.RunID, "parser fix", "raw JSON"}, []string{"conversation", "messages", "artifacts", "traces", "runs", "reports"}},
		{"/conversations/" + esc(f.Conv) + "?from=0&limit=2", []string{"please fix the parser", "newer"}, []string{"messages", "from", "limit"}},
		{"/conversations/" + esc(f.Conv) + "/messages/3", []string{"THE-END"}, []string{"conversation_id", "message"}},
		{"/runtime", []string{f.Runtime, "coder"}, []string{"sessions", "count", "by_agent"}},
		{"/runtime/" + esc(f.Runtime), []string{"claude-opus", f.Upload, "download"}, []string{"session", "history_len", "uploads"}},
		{"/runtime/" + esc(f.StaleRuntime), []string{`id="stale-turn"`, "lost its lease", "t-stale", "lease lapsed"}, []string{"session"}},
		{"/audit", []string{`id="digest"`, "verified", "agent-7", "agent-8", "agent-9", `id="heads"`}, []string{"report", "heads", "events"}},
		{"/audit?agent=agent-7", []string{`id="audit-events"`, "req-2", "res-live", "o-tool_not_authorized", "limits"}, []string{"report", "heads", "events", "filter"}},
		{"/audit?session=" + f.Governed + "&kind=reserve", []string{"res-live", "res-big", "o-spend_limit_exceeded"}, []string{"events"}},
		{"/search", []string{`id="search-q"`, "every word must occur"}, []string{"query", "filter", "result", "searched"}},
		{"/search?q=PARSER&kind=message", []string{`id="search-hits"`, "<mark>parser</mark>", `href="/console/conversations/` + esc(f.Conv) + `/messages/`},
			[]string{"query", "filter", "result", "searched"}},
		{"/search?q=window.__xss", []string{"&lt;script&gt;<mark>window.__xss</mark>=1&lt;/script&gt;"}, []string{"result"}},
		{"/search?q=" + url.QueryEscape("京"), []string{`id="search-scanned"`, "no matches"}, []string{"result"}},
		{"/agents", []string{`id="agent-apps"`, f.AgentKey.App, f.AgentKey.User, "other-app"}, []string{"apps", "sessions"}},
		{"/agents?app=" + f.AgentKey.App, []string{f.AgentKey.Session, f.AgentKey.User, `id="agent-users"`, "bob"}, []string{"app", "users", "sessions"}},
		{"/agents?app=" + f.AgentKey.App + "&user=bob", []string{f.AgentKey.Session, "every user of"}, []string{"app", "user", "sessions"}},
		{"/agents/session?" + ak, []string{"Merged state", "app:theme", "step", "inv-1"}, []string{"session", "merged_state", "events"}},
		{"/agents/session?" + ak + "&invocation=inv-0", []string{"inv-0"}, []string{"events", "invocation"}},
	}
}

func TestPagesAndJSONTwins(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		st, f, _ := seeded(t, b)
		srv := newServer(t, st, f, console.Options{})
		for _, pc := range pageCases(f) {
			resp, body := get(t, srv, prefix+pc.path)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d\n%s", pc.path, resp.StatusCode, body)
				continue
			}
			checkSecurityHeaders(t, pc.path, resp, true)
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("GET %s: Content-Type %q", pc.path, ct)
			}
			for _, want := range pc.html {
				if !strings.Contains(body, want) {
					t.Errorf("GET %s: page lacks %q", pc.path, want)
				}
			}
			checkLinksUnderPrefix(t, pc.path, body)

			sep := "?"
			if strings.Contains(pc.path, "?") {
				sep = "&"
			}
			resp, body = get(t, srv, prefix+pc.path+sep+"format=json")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("GET %s as JSON: %d %s", pc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
				continue
			}
			checkSecurityHeaders(t, pc.path+" (json)", resp, true)
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Errorf("GET %s as JSON: %v", pc.path, err)
				continue
			}
			for _, k := range pc.jsonKeys {
				if _, ok := doc[k]; !ok {
					t.Errorf("GET %s as JSON: no key %q in %s", pc.path, k, truncate(body))
				}
			}
		}
	})
}

func truncate(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

func checkSecurityHeaders(t *testing.T, what string, resp *http.Response, data bool) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: CSP allows inline code: %q", what, csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: no nosniff", what)
	}
	if data && resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: Cache-Control %q, want no-store", what, resp.Header.Get("Cache-Control"))
	}
}

var (
	attrURL = regexp.MustCompile(`(?:href|src|action)="([^"]*)"`)
	linkURL = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
)

// checkLinksUnderPrefix fails for a link or asset outside the prefix.
func checkLinksUnderPrefix(t *testing.T, what, body string) {
	t.Helper()
	for _, m := range attrURL.FindAllStringSubmatch(body, -1) {
		u := m[1]
		if strings.HasPrefix(u, "#") {
			continue
		}
		if !strings.HasPrefix(u, prefix+"/") && u != prefix {
			t.Errorf("%s: link %q is not under %s", what, u, prefix)
		}
	}
}

func TestAgentContentIsEscaped(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	for _, path := range []string{"/conversations/" + url.PathEscape(f.Conv), "/governed/" + f.Governed,
		"/agents/session?app=" + f.AgentKey.App + "&user=" + f.AgentKey.User + "&session=" + f.AgentKey.Session} {
		_, body := get(t, srv, prefix+path)
		if strings.Contains(body, "<script>window") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: agent content reached the page unescaped", path)
		}
		if !strings.Contains(body, "&lt;script&gt;window.__xss=1&lt;/script&gt;") && !strings.Contains(body, `&lt;script&gt;window.__xss=1&lt;/script&gt;`) {
			t.Errorf("%s: the escaped message is missing", path)
		}
		if n := strings.Count(body, "<script"); n != 1 { // the console's own script tag only
			t.Errorf("%s: %d script elements, want 1", path, n)
		}
	}
}

func TestMutatingMethodsAre405(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	paths := []string{"/", "/healthz", "/metrics", "/go?id=" + f.Governed, "/static/console.js"}
	for _, pc := range pageCases(f) {
		paths = append(paths, pc.path)
	}
	for _, p := range paths {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, "PROPFIND"} {
			req, _ := http.NewRequest(m, srv.URL+prefix+p, strings.NewReader("x=1"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d (Allow %q), want 405", m, p, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
}

// TestCrawlLeavesTheDatabaseUnchanged follows every link of the console
// from the overview (and the go-to box), then checks that the SQLite
// file's bytes did not change.
func TestCrawlLeavesTheDatabaseUnchanged(t *testing.T) {
	st, f, path := seeded(t, sqliteBackend)
	before := fileHash(t, path)
	srv := newServer(t, st, f, console.Options{HideContent: true})
	seen := map[string]bool{}
	queue := []string{prefix + "/", prefix + "/go?id=" + f.Governed, prefix + "/agents?app=" + f.AgentKey.App, prefix + "/metrics", prefix + "/healthz"}
	for len(queue) > 0 && len(seen) < 400 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		resp, body := get(t, srv, u)
		switch {
		case resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusMovedPermanently:
			queue = append(queue, resp.Header.Get("Location"))
			continue
		case resp.StatusCode != http.StatusOK:
			t.Errorf("GET %s: %d", u, resp.StatusCode)
			continue
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			continue
		}
		for _, m := range linkURL.FindAllStringSubmatch(body, -1) {
			link := strings.ReplaceAll(m[1], "&amp;", "&")
			if strings.HasPrefix(link, prefix+"/") && !strings.HasPrefix(link, prefix+"/go") {
				queue = append(queue, link)
			}
		}
	}
	if len(seen) < 25 {
		t.Errorf("the crawl reached only %d pages: %v", len(seen), seen)
	}
	st.Close()
	if after := fileHash(t, path); after != before {
		t.Error("the database file changed during the crawl")
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestHideContentAndRedaction(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	redact := func(field, text string) string { return strings.ReplaceAll(text, "parser", "[REDACTED]") }
	srv := newServer(t, st, f, console.Options{HideContent: true, Redact: redact})
	convPath := prefix + "/conversations/" + url.PathEscape(f.Conv)
	_, body := get(t, srv, convPath)
	if strings.Contains(body, "please fix") || strings.Contains(body, "THE-END") {
		t.Error("hidden content is on the page")
	}
	if !strings.Contains(body, "show content") {
		t.Error("no way to show the hidden content")
	}
	_, body = get(t, srv, convPath+"?format=json")
	if strings.Contains(body, "please fix") {
		t.Error("hidden content is in the JSON twin")
	}
	_, body = get(t, srv, convPath+"?content=show&format=json")
	if !strings.Contains(body, "please fix the [REDACTED]") || strings.Contains(body, "please fix the parser") {
		t.Errorf("shown content is not redacted: %s", truncate(body))
	}
	if !strings.Contains(body, `"path": "[REDACTED].go"`) && !strings.Contains(body, `"path":"[REDACTED].go"`) {
		t.Errorf("tool input not redacted: %s", body)
	}
	resp, _ := get(t, srv, prefix+"/runtime/"+f.Runtime+"/uploads/"+f.Upload)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("upload download with content hidden: %d, want 400", resp.StatusCode)
	}
}

func TestUploadIsAnAttachment(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	resp, body := get(t, srv, prefix+"/runtime/"+f.Runtime+"/uploads/"+f.Upload)
	if resp.StatusCode != http.StatusOK || body != string(f.Uploaded) {
		t.Fatalf("download: %d %q", resp.StatusCode, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") {
		t.Errorf("Content-Disposition %q, want an attachment", cd)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	checkSecurityHeaders(t, "upload", resp, true)
	resp, body = get(t, srv, prefix+"/conversations/"+url.PathEscape(f.Conv)+"/messages.json?from=0&limit=2")
	if !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;") || !strings.Contains(body, "please fix the parser") {
		t.Errorf("messages download: %v %s", resp.Header, truncate(body))
	}
}

func TestGoTo(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	for id, want := range map[string]string{
		f.Governed: prefix + "/governed/" + f.Governed,
		f.Conv:     prefix + "/conversations/" + url.PathEscape(f.Conv),
		f.Runtime:  prefix + "/runtime/" + f.Runtime,
	} {
		resp, _ := get(t, srv, prefix+"/go?id="+url.QueryEscape(id))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("go %s: %d %q, want %q", id, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	resp, body := get(t, srv, prefix+"/go?id=nothing-here")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "nothing-here") {
		t.Errorf("go to a missing id: %d", resp.StatusCode)
	}
	resp, _ = get(t, srv, prefix+"/governed/missing")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing session: %d", resp.StatusCode)
	}
	resp, _ = get(t, srv, prefix+"/governed?limit=x")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad limit: %d", resp.StatusCode)
	}
}

func TestGovernedFiltersAndPaging(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	var ids []string
	next := prefix + "/governed?limit=2&format=json"
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		_, body := get(t, srv, next)
		var doc struct {
			Sessions []store.Session `json:"sessions"`
			Next     string          `json:"next"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		for _, s := range doc.Sessions {
			ids = append(ids, s.ID)
		}
		next = ""
		if doc.Next != "" {
			next = prefix + "/governed?limit=2&format=json&after=" + url.QueryEscape(doc.Next)
		}
	}
	if len(ids) != f.Sessions {
		t.Errorf("paged through %d sessions (%v), want %d", len(ids), ids, f.Sessions)
	}
	for q, want := range map[string]int{"tool=search": 7, "tool=read_file": 2, "agent=agent-9": 5, "status=closed": 1, "tool=search&agent=agent-7": 1,
		"since=2026-01-03": 0, "until=2026-01-03": 7} {
		_, body := get(t, srv, prefix+"/governed?format=json&"+q)
		var doc struct {
			Sessions []store.Session `json:"sessions"`
		}
		json.Unmarshal([]byte(body), &doc)
		if len(doc.Sessions) != want {
			t.Errorf("filter %s: %d sessions, want %d", q, len(doc.Sessions), want)
		}
	}
}

func TestMetrics(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		st, f, _ := seeded(t, b)
		srv := newServer(t, st, f, console.Options{})
		resp, body := get(t, srv, prefix+"/metrics")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("metrics: %d", resp.StatusCode)
		}
		for _, want := range []string{
			`sessionstore_governed_sessions{status="closed"} 1`,
			`sessionstore_governed_calls_made 4`,
			`sessionstore_conversations{state="active"} 2`,
			`sessionstore_runtime_sessions{agent="coder"} 2`,
			`sessionstore_scrape_success 1`,
			`sessionstore_governed_use_records{outcome="ok"} 3`,
			`sessionstore_governed_use_records{outcome="tool_not_authorized"} 1`,
			`sessionstore_audit_decisions{kind="use",outcome="tool_not_authorized"} 1`,
			`sessionstore_audit_decisions{kind="reserve",outcome="spend_limit_exceeded"} 1`,
			`sessionstore_audit_decisions{kind="create",outcome="ok"} 7`,
			`go_goroutines`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		resp, body = get(t, srv, prefix+"/healthz")
		if resp.StatusCode != http.StatusOK || body != "ok\n" {
			t.Errorf("healthz: %d %q", resp.StatusCode, body)
		}
	})
}

func TestNewRefusals(t *testing.T) {
	ctx := t.Context()
	loc := sqliteBackend.newLocation(t)
	clock := storeClock()
	w, err := sqliteBackend.open(ctx, loc, clock, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := console.New(w, console.Options{ReadOnly: true}); err == nil {
		t.Error("ReadOnly accepted a writable store")
	}
	if _, err := console.New(w, console.Options{}); err != nil {
		t.Errorf("a writable store without ReadOnly: %v", err)
	}
	for _, p := range []string{"console", "/a b", "/a/../b", "/a?x"} {
		if _, err := console.New(w, console.Options{Prefix: p}); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	if _, err := console.New(nil, console.Options{}); err == nil {
		t.Error("nil store accepted")
	}
}
