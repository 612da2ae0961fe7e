package console_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// chromium finds a Chromium (or Chrome) binary: $CHROMIUM, else the
// usual names on PATH. Outside CI the browser test skips without one; in
// CI (CI=true) it must run (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary found: in CI the browser test must run (.ci/run installs Debian's chromium; or set $CHROMIUM)")
	}
	t.Skip("browser test skipped: no chromium binary found on PATH (apt-get install chromium, or set $CHROMIUM to a Chromium or Chrome binary)")
	return ""
}

// screenshotDir is where the browser test writes its screenshots:
// $CONSOLE_SCREENSHOTS, else a directory of the test's own.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestBrowser drives a real Chromium through the console's main flows:
// the overview, filtering governed sessions, a conversation with a tool
// call expanded, an agent-written <script> and <img onerror> that must
// render as text and run nothing, a live page following appends made by
// another writer, and the go-to box. Any console error, uncaught
// exception or CSP violation fails it. It writes a screenshot of each
// main page.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: drives a Chromium process; skipped by -short (go test and ./test.sh run it)")
	}
	bin := chromium(t)
	shots := screenshotDir(t)
	ctx := context.Background()

	// The fixture, then the console on a read-only store of the file,
	// while a writable store (another writer, as another process would
	// be) appends to a conversation.
	path := filepath.Join(t.TempDir(), "sessions.db")
	clock := storetest.NewClock()
	w, err := sqlstore.Open(ctx, path, sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stale := staleTurn(t, func() (store.Store, error) { return sqlstore.Open(ctx, path, sqlstore.WithClock(clock.Now)) })
	f := populate(t, w, clock)
	f.StaleRuntime = stale
	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true), sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	srv := newServer(t, ro, f, console.Options{Refresh: time.Minute})
	base := srv.URL + prefix

	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1280, 1000))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// Every CSP violation is recorded by a listener that the browser
	// installs before any script of the page runs (CDP scripts are not
	// subject to the page's CSP).
	if _, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__csp = []; document.addEventListener("securitypolicyviolation", function (e) { window.__csp.push(e.violatedDirective + " " + e.blockedURI); });`,
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning || m.Source == "security" {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s) %s at %s", m.Type, m.Source, m.Text, m.URL))
				mu.Unlock()
			}
		}
	}()

	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		csp, err := chromedp.Run(sctx, chromedp.Evaluate[[]string](`window.__csp || []`))
		if err != nil {
			t.Fatalf("%s: read CSP reports: %v", name, err)
		}
		if len(csp) > 0 {
			t.Errorf("%s: CSP violations: %v", name, csp)
		}
	}
	shot := func(name string) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	evalBool := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}

	// 1. The overview, with its charts.
	step("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("svg#status")), chromedp.WaitVisible(chromedp.CSS("svg#spend")))
	if !evalBool(`document.querySelector("svg#status title").textContent === "Governed sessions by status"`) {
		t.Error("the status chart has no title")
	}
	shot("overview")

	// The export download: the overview links it; fetched from the page,
	// it is the store's export document.
	if !evalBool(`(function(){ const a = document.querySelector(".export-all a[download]"); if (!a) return false;
		fetch(a.href).then(r => r.json()).then(d => { window.__export = d.format + " " + d.governed_sessions.length + " " +
			d.conversations.length + " " + d.agent_sessions.sessions.length + " " + d.audit.heads.length; }); return true; })()`) {
		t.Fatal("the overview has no export download link")
	}
	got := ""
	for deadline := time.Now().Add(10 * time.Second); got == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, _ = chromedp.Run(bctx, chromedp.Evaluate[string](`window.__export || ""`))
	}
	if fields := strings.Fields(got); len(fields) != 5 || fields[0] != "sessionctl-export" || fields[1] == "0" || fields[2] == "0" || fields[3] == "0" || fields[4] == "0" {
		t.Errorf("the export fetched from the overview: %q", got)
	}

	// 2. Filter the governed sessions by agent, through the form.
	step("filter", chromedp.Navigate(base+"/governed"), chromedp.SendKeys(chromedp.CSS(`input[name="agent"]`), "agent-9"),
		chromedp.Click(chromedp.ID("apply-filters")), chromedp.WaitVisible(chromedp.CSS(`input[name="agent"][value="agent-9"]`)))
	if n, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#governed-list tbody tr").length`)); n != 5 {
		t.Errorf("filtered list has %d rows, want 5", n)
	}
	shot("governed")
	step("governed detail", chromedp.Navigate(base+"/governed/"+f.Governed), chromedp.WaitVisible(chromedp.CSS("svg#burndown")),
		chromedp.WaitVisible(chromedp.ID("spend-limits")), chromedp.WaitVisible(chromedp.ID("audit-events")))
	if n, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#spend-limits tbody tr").length`)); n != 3 {
		t.Errorf("the spend table has %d rows, want 3 limits", n)
	}
	if !evalBool(`document.getElementById("reservations").textContent.includes(` + fmt.Sprintf("%q", f.Reservation) + `)`) {
		t.Error("the live reservation is not listed")
	}
	shot("governed-detail")
	// Times read in the reader's zone (console.js), with UTC on hover.
	if !evalBool(`(() => { const t = document.querySelector("time[datetime]"); return !!t && t.dataset.local === "1" && t.title.endsWith("Z") })()`) {
		t.Error("the page's times are not shown in local time with UTC on hover")
	}
	// Cells wrap at word boundaries: on a narrow screen no word of a cell
	// is cut in two ("note s", "reservations_cl osed"); an audit event's
	// JSON detail, a text of its own, wraps where it must.
	for _, p := range []string{"/governed/" + f.Governed, "/audit?agent=agent-7", "/conversations"} {
		step("narrow "+p, chromedp.EmulateViewport(480, 900), chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("table")))
		broken, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
			const bad = [];
			document.querySelectorAll("th, td:not(.detail)").forEach(c => {
				const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
				for (let n = walk.nextNode(); n; n = walk.nextNode()) {
					const w = n.data.trim();
					if (!/^[\w.,:]{2,24}$/.test(w)) continue; // a word (a hyphen or a slash may break a line)
					const r = document.createRange();
					r.selectNodeContents(n);
					if ([...r.getClientRects()].filter(x => x.width > 0).length > 1) bad.push(w);
				}
			});
			return bad;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if len(broken) > 0 {
			t.Errorf("%s: words cut in two on a narrow screen: %q", p, broken)
		}
	}
	step("wide again", chromedp.EmulateViewport(1280, 900))

	// The audit page: the verification, the chains, one chain's events.
	step("audit", chromedp.Navigate(base+"/audit?agent=agent-7"), chromedp.WaitVisible(chromedp.ID("digest")), chromedp.WaitVisible(chromedp.ID("audit-events")))
	if !evalBool(`document.getElementById("digest").textContent.length === 64`) {
		t.Error("the audit page shows no digest")
	}
	shot("audit")

	// The agent applications, then one application's users and sessions,
	// by links.
	step("agent apps", chromedp.Navigate(base+"/agents"), chromedp.WaitVisible(chromedp.ID("agent-apps")))
	shot("agent-apps")
	step("agent app", chromedp.Click(chromedp.CSS(`#agent-apps a[href$="app=`+f.AgentKey.App+`"]`)), chromedp.WaitVisible(chromedp.ID("agent-users")))
	shot("agent-app")

	// A runtime session whose process died: its stale turn.
	step("stale turn", chromedp.Navigate(base+"/runtime/"+f.StaleRuntime), chromedp.WaitVisible(chromedp.ID("stale-turn")))
	shot("runtime-stale")

	// 3. A conversation: expand the tool call.
	convURL := base + "/conversations/" + url.PathEscape(f.Conv) + "?from=0"
	step("conversation", chromedp.Navigate(convURL), chromedp.WaitVisible(chromedp.CSS("details.b-tool_use summary")))
	if evalBool(`document.querySelector("details.b-tool_use").open`) {
		t.Error("the tool call is expanded before a click")
	}
	step("expand tool call", chromedp.Click(chromedp.CSS("details.b-tool_use summary")), chromedp.WaitVisible(chromedp.CSS("details.b-tool_use[open] pre")))
	if !evalBool(`document.querySelector("details.b-tool_use[open] pre").textContent.includes("parser.go")`) {
		t.Error("the expanded tool call does not show its input")
	}
	shot("conversation")

	// 4. Agent-written markup renders as text and runs nothing.
	if !evalBool(`window.__xss === undefined`) {
		t.Error("agent-written script ran")
	}
	if !evalBool(`Array.from(document.querySelectorAll("li.message pre.content")).some(function (p) { return p.textContent.includes("<script>window.__xss=1</script><img src=x onerror=") })`) {
		t.Error("the agent-written markup is not shown as text")
	}
	if !evalBool(`document.querySelectorAll("main script, main img").length === 0`) {
		t.Error("agent-written markup became elements")
	}

	// 5. Live: the latest page follows appends of another writer through
	// the console's server-sent events (no polling: the page's refresh
	// interval is far longer than the wait), pauses on the button, and
	// after resuming gets what was appended meanwhile, once.
	step("live page", chromedp.Navigate(base+"/conversations/"+url.PathEscape(f.Conv)), chromedp.WaitVisible(chromedp.ID("live")),
		void(chromedp.Poll[bool](`document.body.dataset.live === "on"`, chromedp.WithPollingTimeout(10*time.Second))))
	appendLive := func(text string) {
		t.Helper()
		if _, err := w.Conversations().AppendMessages(ctx, f.Conv, store.AssistantMessage(text)); err != nil {
			t.Fatal(err)
		}
	}
	shows := func(text string) string {
		return fmt.Sprintf(`document.getElementById("message-list").textContent.includes(%q)`, text)
	}
	for i := range 2 {
		text := fmt.Sprintf("live message %d from another writer", i)
		appendLive(text)
		step("live update", void(chromedp.Poll[bool](shows(text), chromedp.WithPollingTimeout(20*time.Second))))
	}
	step("pause", chromedp.Click(chromedp.ID("live")))
	if !evalBool(`document.body.dataset.live === "paused" && document.getElementById("live").getAttribute("aria-pressed") === "true"`) {
		t.Error("the pause button did not pause the page")
	}
	appendLive("appended while paused")
	time.Sleep(time.Second)
	if evalBool(shows("appended while paused")) {
		t.Error("a paused page still updated")
	}
	step("resume", chromedp.Click(chromedp.ID("live")),
		void(chromedp.Poll[bool](shows("appended while paused"), chromedp.WithPollingTimeout(20*time.Second))))
	if !evalBool(`document.body.dataset.live === "on" && document.querySelectorAll("#message-list li.message").length === new Set(Array.from(document.querySelectorAll("#message-list li.message")).map(function (li) { return li.id; })).size`) {
		t.Error("after resuming, the page is not live or shows a message twice")
	}
	if !evalBool(`document.querySelectorAll("main script, main img").length === 0 && window.__xss === undefined`) {
		t.Error("agent-written markup became elements on the live page")
	}

	// 6. The go-to box.
	step("go to", chromedp.Navigate(base+"/"), chromedp.SendKeys(chromedp.ID("goto-id"), f.Runtime+"\n"),
		chromedp.WaitVisible(chromedp.CSS("#uploads")))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, prefix+"/runtime/"+f.Runtime) {
		t.Errorf("go to %s landed on %q (%v)", f.Runtime, loc, err)
	}
	shot("runtime")
	step("agent session", chromedp.Navigate(base+"/agents/session?app="+f.AgentKey.App+"&user="+f.AgentKey.User+"&session="+f.AgentKey.Session),
		chromedp.WaitVisible(chromedp.ID("events")))
	if !evalBool(`window.__xss === undefined`) {
		t.Error("agent-written script ran on the agent session page")
	}
	shot("agent-session")

	// 7. A word longer than a line (a URL, a hash) breaks instead of
	// widening the page: a search snippet, an audit chain's head hash
	// (both widened the page past an 800-pixel window).
	long := "https://example.com/" + strings.Repeat("averyverylongpathsegment", 5)
	if _, err := w.Conversations().AppendMessages(ctx, f.Conv, store.AssistantMessage("see "+long+" for the log")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Search(ctx, store.SearchQuery{Query: "averyverylongpathsegment"}); err != nil { // folds it into the index
		t.Fatal(err)
	}
	fits := func(id string) string {
		return `document.getElementById("` + id + `").getBoundingClientRect().right <= document.documentElement.clientWidth && document.documentElement.scrollWidth <= document.documentElement.clientWidth`
	}
	step("long word in a snippet", chromedp.EmulateViewport(800, 900), chromedp.Navigate(base+"/search?q=averyverylongpathsegment"), chromedp.WaitVisible(chromedp.ID("search-hits")))
	if !evalBool(`document.getElementById("search-hits").textContent.includes("averyverylongpathsegment")`) || !evalBool(fits("search-hits")) {
		t.Error("a search snippet with a long word widens the page past the window")
	}
	shot("search-long-word")
	step("audit heads", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(chromedp.ID("heads")))
	if !evalBool(fits("heads")) {
		t.Error("the audit chains' head hashes widen the page past the window")
	}
	step("uploads", chromedp.Navigate(base+"/runtime/"+f.Runtime), chromedp.WaitVisible(chromedp.ID("uploads")))
	if !evalBool(fits("uploads")) {
		t.Error("the uploads' SHA-256 widens the page past the window")
	}
	// A figure and its unit stay on one line ("56 B" was cut in two).
	if !evalBool(`[...document.querySelectorAll("#uploads td.n")].every(c => { const r = document.createRange(); r.selectNodeContents(c); return [...r.getClientRects()].filter(x => x.width > 0).length === 1 })`) {
		t.Error("an upload's size is cut in two")
	}
	step("wide at last", chromedp.EmulateViewport(1280, 900))

	cancelBrowser()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
	t.Logf("screenshots in %s", shots)
}

// void makes an action that returns a value into one that returns none.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
