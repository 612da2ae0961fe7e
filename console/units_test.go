package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestJSONTwinsSpeakUnits: every page's JSON twin keeps the README's
// conventions: keys in lower_snake_case (no Go field name such as "Now"),
// durations in whole milliseconds in *_ms fields (never Go nanoseconds),
// times RFC 3339 UTC and absent when there is none (never Go's zero time
// nor the Unix epoch of a lifetime window), money without float noise.
func TestJSONTwinsSpeakUnits(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	for _, pc := range pageCases(f) {
		sep := "?"
		if strings.Contains(pc.path, "?") {
			sep = "&"
		}
		_, body := get(t, srv, prefix+pc.path+sep+"format=json")
		var doc any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Errorf("GET %s as JSON: %v", pc.path, err)
			continue
		}
		walkJSON(t, pc.path, "", doc)
		if strings.Contains(body, `\u003c`) {
			t.Errorf("GET %s as JSON: text with HTML escapes (\\u003c for <)", pc.path)
		}
	}
}

// dataMaps are the objects whose keys are data (agent ids, states, state
// keys), not field names.
var dataMaps = []string{".by_status", ".by_state", ".by_agent", "merged_state", ".state", ".detail", ".data"}

func walkJSON(t *testing.T, path, at string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		data := false
		for _, d := range dataMaps {
			data = data || strings.HasSuffix(at, d) || strings.Contains(at, d+".")
		}
		for k, e := range x {
			if !data && (k == "" || unicode.IsUpper(rune(k[0]))) {
				t.Errorf("GET %s as JSON: key %s.%s is not lower_snake_case", path, at, k)
			}
			switch k {
			case "time_limit", "rate_window", "max_age", "ttl", "elapsed":
				t.Errorf("GET %s as JSON: duration %s.%s is not in a *_ms field", path, at, k)
			}
			walkJSON(t, path, at+"."+k, e)
		}
	case []any:
		for _, e := range x {
			walkJSON(t, path, at+"[]", e)
		}
	case float64:
		// Money has at most 6 decimals (micro-units): more is a float sum
		// printed as it came (0.08639999999999999).
		if _, frac, _ := strings.Cut(strconv.FormatFloat(x, 'f', -1, 64), "."); strings.Contains(at, "cost") && len(frac) > 6 {
			t.Errorf("GET %s as JSON: %s is %v, float noise", path, at, x)
		}
	case string:
		if strings.HasPrefix(x, "0001-01-01T") || strings.HasPrefix(x, "1970-01-01T") {
			t.Errorf("GET %s as JSON: %s is %q, a time that is none", path, at, x)
		}
	}
}

// TestMoneyWithoutFloatNoise: the overview's JSON and /metrics sum
// conversation costs (kept as floats by the store) exactly, to the
// micro-unit: 0.1 + 0.2 is 0.30 USD, never 0.30000000000000004; the
// page shows it with its currency.
func TestMoneyWithoutFloatNoise(t *testing.T) {
	srv := serveWritten(t, func(ctx context.Context, w store.Store) error {
		for id, cost := range map[string]float64{"c1": 0.1, "c2": 0.2} {
			if _, err := w.Conversations().Save(ctx, store.Conversation{ID: id, TotalCost: cost}); err != nil {
				return err
			}
		}
		return nil
	})
	_, body := get(t, srv, prefix+"/?format=json")
	var doc struct {
		Stats struct {
			Conversations map[string]any `json:"conversations"`
		} `json:"stats"`
		SpendByDay []map[string]any `json:"spend_by_day"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Stats.Conversations; c["total_cost"] != "0.30 USD" || c["total_cost_micros"] != 300000.0 {
		t.Errorf("overview JSON: conversations %v", c)
	}
	if last := doc.SpendByDay[len(doc.SpendByDay)-1]; last["cost"] != "0.30 USD" || last["cost_micros"] != 300000.0 {
		t.Errorf("overview JSON: today's spend %v", last)
	}
	_, metrics := get(t, srv, prefix+"/metrics")
	if !strings.Contains(metrics, "\nsessionstore_conversation_cost_usd 0.3\n") {
		t.Errorf("/metrics: the cost is not 0.3:\n%s", metrics)
	}
	if _, page := get(t, srv, prefix+"/"); !strings.Contains(page, "0.30 USD") {
		t.Errorf("the overview does not show 0.30 USD")
	}
	// One conversation whose cost the store keeps as a float sum.
	a, b := 0.1, 0.2
	srv = serveWritten(t, func(ctx context.Context, w store.Store) error {
		_, err := w.Conversations().Save(ctx, store.Conversation{ID: "c3", TotalCost: a + b})
		return err
	})
	for _, path := range []string{"/conversations?format=json", "/conversations/c3?format=json", "/?format=json"} {
		_, body := get(t, srv, prefix+path)
		if strings.Contains(body, "0.30000000000000004") || !strings.Contains(body, `"total_cost": "0.30 USD"`) {
			t.Errorf("%s: the conversation's cost is not exact:\n%.600s", path, body)
		}
	}
}

// TestTimesOnPages: a page writes each time as a <time> element with the
// instant in RFC 3339 UTC (which the console's script shows in the
// reader's zone) and UTC on hover; durations and ages as people write
// them ("5 calls per 1 min", "in 59 min"), not Go's 1m0s.
func TestTimesOnPages(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	_, body := get(t, srv, prefix+"/governed/"+f.Governed)
	created := regexp.MustCompile(`<dt>created</dt><dd><time datetime="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)" title="([^"]+)">([^<]+)</time></dd>`)
	m := created.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the created time is not a <time> element: %s", between(body, "<dt>created</dt>", "</dd>"))
	}
	if !strings.HasSuffix(m[3], "Z") || m[3] != m[4] {
		t.Errorf("the created time's title and text are not UTC: %q", m[0])
	}
	for _, want := range []string{"5 calls per 1 min", "calls per 1 min"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if strings.Contains(body, "1m0s") || strings.Contains(body, "h0m") {
		t.Errorf("the page shows a Go duration")
	}
	if _, js := get(t, srv, prefix+"/static/console.js"); !strings.Contains(js, "time[datetime]") {
		t.Errorf("console.js does not render <time> elements in local time")
	}
}

// serveWritten serves a console over a fresh SQLite store that write
// filled, opened read-only as the console wants it.
func serveWritten(t *testing.T, write func(context.Context, store.Store) error) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock()
	loc := sqliteBackend.newLocation(t)
	w, err := sqliteBackend.open(ctx, loc, clock.Now, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqliteBackend.open(ctx, loc, clock.Now, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newServer(t, st, fixture{Clock: clock}, console.Options{})
}

// TestRawJSONReadsAsItsCharacters: a tool input that json.Marshal wrote
// (\u003cb\u003e for <b>) reads on the page as the characters it holds,
// escaped for HTML by the page as any text is, in the tool call and in
// the raw JSON.
func TestRawJSONReadsAsItsCharacters(t *testing.T) {
	input, _ := json.Marshal(map[string]string{"html": "<b>bold</b> & co"})
	srv := serveWritten(t, func(ctx context.Context, w store.Store) error {
		if _, err := w.Conversations().Save(ctx, store.Conversation{ID: "c1"}); err != nil {
			return err
		}
		_, err := w.Conversations().AppendMessages(ctx, "c1",
			store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{store.ToolUseBlock("call-1", "render", input)}})
		return err
	})
	for _, path := range []string{"/conversations/c1", "/conversations/c1/messages/0"} {
		_, body := get(t, srv, prefix+path)
		if strings.Contains(body, `\u003c`) || strings.Contains(body, `\u0026`) {
			t.Errorf("%s shows JSON's HTML escapes", path)
		}
		if !strings.Contains(body, "&lt;b&gt;bold&lt;/b&gt; &amp; co") {
			t.Errorf("%s does not show the tool input's characters:\n%s", path, between(body, "<main", "</main>"))
		}
		if strings.Contains(body, "<b>bold") {
			t.Errorf("%s let the tool input's markup through", path)
		}
	}
}

// TestPluralsOnPages: one of a thing is singular ("1 agent alias", "1
// session"), more are plural.
func TestPluralsOnPages(t *testing.T) {
	srv := serveWritten(t, func(ctx context.Context, w store.Store) error {
		_, err := w.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "rt-1", AgentAlias: "coder", WorkspaceDir: "/w", ChatMode: store.ChatModeChat})
		return err
	})
	_, body := get(t, srv, prefix+"/")
	if !strings.Contains(body, "1 agent alias<") || strings.Contains(body, "1 agent aliases") {
		t.Errorf("the overview does not say \"1 agent alias\": %s", between(body, "Runtime sessions", "</div>"))
	}
	if !strings.Contains(body, "0 messages") {
		t.Errorf("the overview does not say \"0 messages\"")
	}
	_, body = get(t, srv, prefix+"/runtime")
	if !strings.Contains(body, "1 session ") || strings.Contains(body, "1 sessions") {
		t.Errorf("the runtime list does not say \"1 session\": %s", between(body, "<main", "</table>"))
	}
}

// TestBadFilterPage: a bad filter answers 400 with a page that names the
// field and why, echoes what was asked (cut to a readable length, the
// whole length stated) and links to the same list without the bad filter,
// the others kept; a 20,000-character id does not fill the heading.
func TestBadFilterPage(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	resp, body := get(t, srv, prefix+"/governed?status=active&agent=agent-7&since=yesterday")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, want := range []string{`<code>since</code>: must be a date`, `<code>agent</code> = <code>agent-7</code>`,
		`id="error-retry" href="/console/governed?agent=agent-7&amp;status=active"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the error page lacks %q:\n%s", want, between(body, "<main", "</main>"))
		}
	}
	_, raw := get(t, srv, prefix+"/governed?since=yesterday&format=json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || doc["field"] != "since" || doc["reason"] == "" {
		t.Errorf("the error's JSON twin: %s", raw)
	}
	long := strings.Repeat("x", 20_000)
	_, body = get(t, srv, prefix+"/governed?agent="+long+"&since=nope")
	if echo := between(body, `id="error-filters"`, "</ul>"); strings.Contains(echo, long) || !strings.Contains(echo, "(20000 characters)") {
		t.Errorf("the error page echoes a 20,000-character filter whole, or without its length")
	}
	_, body = get(t, srv, prefix+"/go?id="+long)
	h1 := between(body, "<h1", "</h1>")
	if len(h1) > 400 || !strings.Contains(h1, "(20000 characters)") {
		t.Errorf("the heading of a 20,000-character id: %d bytes: %.200s", len(h1), h1)
	}
	// The page below the heading cuts it too (it said "Nothing has the id"
	// and the 20,000 characters).
	if main := between(body, `<p class="error">`, "</p>"); len(main) > 1000 || !strings.Contains(main, "(20000 characters)") {
		t.Errorf("the go-to page of a 20,000-character id: %d bytes: %.300s", len(main), main)
	}

	// A refused filter is named as the form sends it, and the retry drops
	// it (the page named the store's agent_id, session_id and kinds, and
	// its retry kept the bad filter); an id in the path has no page
	// without it, so no retry.
	id300 := strings.Repeat("k", 300)
	for _, c := range []struct{ url, field, retry string }{
		{"/governed?status=active&agent=" + id300, "agent", `href="/console/governed?status=active"`},
		{"/audit?session=" + id300, "session", `href="/console/audit"`},
		{"/audit?agent=a&kind=bogus", "kind", `href="/console/audit?agent=a"`},
		{"/search?q=x&kind=bogus", "kind", `href="/console/search?q=x"`},
		{"/governed/" + id300, "id", ""},
	} {
		resp, body := get(t, srv, prefix+c.url)
		main := between(body, "<main", "</main>")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(main, `<p id="error-field"><code>`+c.field+`</code>`) {
			t.Errorf("%.60s: %d, the page does not name %s:\n%.600s", c.url, resp.StatusCode, c.field, main)
		}
		if retry := between(main, `id="error-retry"`, ">"); (c.retry == "") != (retry == "") || !strings.Contains(retry, c.retry) {
			t.Errorf("%.60s: the retry link is %q, want %q", c.url, retry, c.retry)
		}
	}
}

// TestDateFilters: the date filters are date inputs (the browser's date
// picker), not text with Go's layout "2006-01-02" as a placeholder, and
// a date they send filters the list.
func TestDateFilters(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	_, body := get(t, srv, prefix+"/governed")
	for _, name := range []string{"since", "until"} {
		if !strings.Contains(body, `<input type="date" name="`+name+`"`) {
			t.Errorf("the %s filter is not a date input", name)
		}
	}
	if strings.Contains(body, "2006-01-02") {
		t.Error("the page shows Go's time layout")
	}
	day := f.Clock.Now().UTC().Format("2006-01-02")
	if resp, body := get(t, srv, prefix+"/governed?since="+day); resp.StatusCode != http.StatusOK || !strings.Contains(body, `value="`+day+`"`) {
		t.Errorf("a date from the picker: %d, value kept: %v", resp.StatusCode, strings.Contains(body, `value="`+day+`"`))
	}
}
