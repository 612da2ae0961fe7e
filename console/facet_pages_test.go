package console_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

// pageKinds classifies a console URL (below the prefix) as the kind of
// page it is; "" for what is not a page (assets, streams, downloads).
var pageKinds = []struct {
	kind string
	path *regexp.Regexp
	// query, when set, must (or, with a leading "!", must not) be a
	// parameter of the URL.
	query []string
}{
	{"overview", regexp.MustCompile(`^/$`), nil},
	{"governed list", regexp.MustCompile(`^/governed$`), nil},
	{"governed session", regexp.MustCompile(`^/governed/[^/]+$`), nil},
	{"conversation list", regexp.MustCompile(`^/conversations$`), nil},
	{"conversation", regexp.MustCompile(`^/conversations/[^/]+$`), nil},
	{"message", regexp.MustCompile(`^/conversations/[^/]+/messages/\d+$`), nil},
	{"runtime list", regexp.MustCompile(`^/runtime$`), nil},
	{"runtime session", regexp.MustCompile(`^/runtime/[^/]+$`), nil},
	{"agent applications", regexp.MustCompile(`^/agents$`), []string{"!app"}},
	{"agent application", regexp.MustCompile(`^/agents$`), []string{"app", "!user"}},
	{"agent user", regexp.MustCompile(`^/agents$`), []string{"app", "user"}},
	{"agent session", regexp.MustCompile(`^/agents/session$`), nil},
	{"audit", regexp.MustCompile(`^/audit$`), []string{"!agent", "!session"}},
	{"audit chain", regexp.MustCompile(`^/audit$`), []string{"agent"}},
}

func pageKind(u *url.URL) string {
	path := strings.TrimPrefix(u.EscapedPath(), prefix)
	q := u.Query()
	for _, k := range pageKinds {
		if !k.path.MatchString(path) {
			continue
		}
		ok := true
		for _, name := range k.query {
			if strings.HasPrefix(name, "!") {
				ok = ok && !q.Has(name[1:])
			} else {
				ok = ok && q.Has(name)
			}
		}
		if ok {
			return k.kind
		}
	}
	return ""
}

// TestCrawlReachesEveryPageKind follows the links of the console from the
// overview alone (no URL typed in) and checks that every kind of page is
// reached, each answering 200: every facet is reachable by links.
func TestCrawlReachesEveryPageKind(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	seen := map[string]bool{}
	reached := map[string]int{}
	queue := []string{prefix + "/"}
	for len(queue) > 0 && len(seen) < 600 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		kind := pageKind(pu)
		if kind == "" || pu.Query().Get("format") == "json" {
			continue
		}
		resp, body := get(t, srv, u)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s (%s): %d", u, kind, resp.StatusCode)
			continue
		}
		reached[kind]++
		for _, m := range linkURL.FindAllStringSubmatch(body, -1) {
			link := strings.ReplaceAll(m[1], "&amp;", "&")
			if i := strings.IndexByte(link, '#'); i >= 0 {
				link = link[:i]
			}
			if strings.HasPrefix(link, prefix+"/") {
				queue = append(queue, link)
			}
		}
	}
	for _, k := range pageKinds {
		if reached[k.kind] == 0 {
			t.Errorf("no link from / leads to a page of kind %q (reached: %v)", k.kind, reached)
		}
	}
	if !seen[prefix+"/runtime/"+f.StaleRuntime] {
		t.Errorf("the runtime session with a stale turn was not reached")
	}
}

func TestGoToEveryFacet(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	for id, want := range map[string]string{
		"s2":           prefix + "/agents/session?app=other-app&session=s2&user=carol",
		f.AgentKey.App: prefix + "/agents?app=" + f.AgentKey.App,
		"agent-8":      prefix + "/audit?agent=agent-8",
	} {
		resp, _ := get(t, srv, prefix+"/go?id="+url.QueryEscape(id))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("go %s: %d %q, want %q", id, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	// An agent session id under two users: a choice.
	resp, body := get(t, srv, prefix+"/go?id="+f.AgentKey.Session)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("go %s: %d", f.AgentKey.Session, resp.StatusCode)
	}
	for _, user := range []string{f.AgentKey.User, "bob"} {
		want := "app=" + f.AgentKey.App + "&amp;session=" + f.AgentKey.Session + "&amp;user=" + user
		if !strings.Contains(body, want) {
			t.Errorf("the choice page lacks the session of %s (%s):\n%s", user, want, body)
		}
	}
	_, body = get(t, srv, prefix+"/go?id="+f.AgentKey.Session+"&format=json")
	var doc struct {
		Matches []struct{ Kind, URL string } `json:"matches"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Matches) != 2 {
		t.Errorf("go %s as JSON: %v %s", f.AgentKey.Session, err, body)
	}
}

// TestGovernedSpendAndAudit: a governed session's page shows its limits
// and its agent's with what is spent, reserved and remaining, its live
// reservations only, and every decision about it from the audit trail.
func TestGovernedSpendAndAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		st, f, _ := seeded(t, b)
		srv := newServer(t, st, f, console.Options{})
		_, body := get(t, srv, prefix+"/governed/"+f.Governed+"?format=json")
		var doc struct {
			Spend struct {
				Limits []struct {
					Scope     string `json:"scope"`
					Metric    string `json:"metric"`
					Window    string `json:"window"`
					Limit     any    `json:"limit"`
					Spent     any    `json:"spent"`
					Reserved  any    `json:"reserved"`
					Remaining any    `json:"remaining"`
				} `json:"limits"`
				Live         int64               `json:"live_reservations"`
				Reservations []store.Reservation `json:"reservations"`
			} `json:"spend"`
			Audit []store.AuditEvent `json:"audit"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("%v\n%s", err, truncate(body))
		}
		// Tokens are integers, money exact decimals with the currency.
		type lim struct {
			scope, metric, window             string
			limit, spent, reserved, remaining any
		}
		want := []lim{
			{"session", "total_tokens", "lifetime", 10_000.0, 1100.0, 1500.0, 7400.0},
			{"session", "cost", "day", "2.00 USD", "0.15 USD", "0.50 USD", "1.35 USD"},
			{"agent", "cost", "day", "5.00 USD", "0.15 USD", "0.50 USD", "4.35 USD"},
		}
		if len(doc.Spend.Limits) != len(want) {
			t.Fatalf("limits %+v, want %+v", doc.Spend.Limits, want)
		}
		for i, w := range want {
			l := doc.Spend.Limits[i]
			if got := (lim{l.Scope, l.Metric, l.Window, l.Limit, l.Spent, l.Reserved, l.Remaining}); got != w {
				t.Errorf("limit %d: %+v, want %+v", i, got, w)
			}
		}
		if doc.Spend.Live != 1 || len(doc.Spend.Reservations) != 1 || doc.Spend.Reservations[0].ID != f.Reservation {
			t.Errorf("live reservations %d %+v, want only %s", doc.Spend.Live, doc.Spend.Reservations, f.Reservation)
		}
		var kinds []string
		for _, e := range doc.Audit {
			if e.SessionID != f.Governed {
				t.Errorf("audit event of another session: %+v", e)
			}
			kinds = append(kinds, string(e.Kind)+":"+e.Outcome)
		}
		wantKinds := "create:ok use:ok use:ok use:tool_not_authorized use:ok reserve:ok settle:ok reserve:ok reserve:spend_limit_exceeded"
		if strings.Join(kinds, " ") != wantKinds {
			t.Errorf("audit events %v, want %s", kinds, wantKinds)
		}
		// A session without limits or reservations says so.
		_, body = get(t, srv, prefix+"/governed/"+f.Closed)
		if !strings.Contains(body, "no spend limits on the session or its agent") || !strings.Contains(body, "none held") {
			t.Errorf("a session without spend: %s", truncate(body))
		}
	})
}

// TestAuditPageShowsProblems: a chain changed behind the store's back is
// a problem on the audit page, with the digest of what is there.
func TestAuditPageShowsProblems(t *testing.T) {
	st, f, path := seeded(t, sqliteBackend)
	srv := newServer(t, st, f, console.Options{})
	_, before := get(t, srv, prefix+"/audit?format=json")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE audit_events SET detail = '{"tools":["rm_rf"]}' WHERE agent_id = 'agent-8' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, srv, prefix+"/audit")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d", resp.StatusCode)
	}
	for _, want := range []string{`id="problems"`, "do not verify", "agent-8", store.AuditChanged} {
		if !strings.Contains(body, want) {
			t.Errorf("the audit page lacks %q", want)
		}
	}
	report, err := st.Audit().Verify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, report.Digest) || report.OK() {
		t.Errorf("the page does not show the store's digest %s (or the store found nothing: %+v)", report.Digest, report)
	}
	if !strings.Contains(before, `"problems": []`) {
		t.Errorf("before the change: %s", truncate(before))
	}
	resp, _ = get(t, srv, prefix+"/audit?kind=nonsense")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown kind: %d, want 400", resp.StatusCode)
	}
}
