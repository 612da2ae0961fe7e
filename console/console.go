// Package console is a read-only web console for a session store: an
// http.Handler that a program mounts in its own mux, and that "sessionctl
// serve" runs on its own.
//
// Every page is rendered on the server with html/template (agent-written
// content is always escaped), works without JavaScript, and has a JSON twin:
// the same URL with ?format=json. Charts are inline SVG drawn in Go, with
// axis labels, units and a text alternative. Every response carries a strict
// Content-Security-Policy (no inline script or style), nosniff and
// frame-ancestors 'none'; data pages are not cached. The console never
// writes: every method but GET and HEAD is answered 405, and Options.ReadOnly
// makes New refuse a store the database itself does not keep read-only
// (sqlstore.WithReadOnly, pgstore.WithReadOnly).
//
// /metrics serves Prometheus metrics of the store; /healthz answers "ok"
// while the database answers reads.
//
// Scope: a console shows the rows of one tenant on every page. Without
// Options.Tenant (the operator's console) that is the default tenant, the
// rows written through the Store itself: its lists, its item pages, and
// every figure of its overview and /metrics (cards, charts, the tables of
// conversations, refusals and decisions) count the same rows, so that a
// figure equals the list it links to. The overview names the tenants
// that own rows besides; a console with Options.Tenant shows one of them.
// (See docs/console/scope.md.)
package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// Options configure the console. The zero value serves at the root of the
// mux, with a silent logger, the system clock, live refresh every 5 seconds
// and content shown.
type Options struct {
	// Prefix is the path the console is mounted under, for example
	// "/console"; every link and asset it emits starts with it. Empty (or
	// "/") mounts it at the root. Mount the handler at Prefix+"/".
	Prefix string
	// ReadOnly makes New refuse a store that was not opened read-only by
	// its backend (sqlstore.WithReadOnly, pgstore.WithReadOnly), so that
	// the database enforces what the console promises. The console itself
	// never writes, whatever this says.
	ReadOnly bool
	// Logger receives the details of failed requests (the pages show only
	// a constant message). Nil discards them.
	Logger *slog.Logger
	// Clock is the current time, for "ago" labels, effective statuses and
	// charts. Nil is time.Now.
	Clock func() time.Time
	// Refresh is the interval at which live pages without a change feed
	// (the overview, a runtime session with a running turn) reload in the
	// browser while live mode is on and the tab is visible (default 5s;
	// negative disables live mode, server-sent events included). Pages of
	// a conversation, an agent session and a governed session follow the
	// store's change feed through server-sent events instead.
	Refresh time.Duration
	// HideContent hides message bodies, tool inputs and results,
	// artifacts and state values until the viewer asks for them
	// (?content=show), in the HTML and in the JSON twins.
	HideContent bool
	// Redact, when set, is applied to every piece of agent-written text
	// before it is rendered or served as JSON: message text, tool inputs
	// and results, artifact content, declared intents, prompts, event and
	// state values. field names what the text is ("message.text",
	// "tool.input", ...). JSON documents are passed as their text; a
	// result that is no longer valid JSON is served as a JSON string.
	Redact func(field, text string) string
	// NoExport removes the export download (/export: the store's export
	// document, package archive, of everything or of one session). It is
	// also off while HideContent or Redact is set: an export is the
	// stored data exactly.
	NoExport bool
	// Tenant, when set, makes the console show the agent sessions,
	// conversations, runtime sessions, governed sessions and audit trail
	// of that tenant only, through the store's tenant handle
	// (store.Tenanter; a name it refuses is ErrInvalidInput), and its
	// overview and /metrics counted over the tenant's rows. The rest is
	// not served in that mode (404): search, export, retention and live
	// updates (see tenant.go).
	Tenant string
	// Registerer, when set, also registers the console's metrics
	// collector there (the console's /metrics always serves its own
	// registry).
	Registerer prometheus.Registerer
	// Keys is the keyring of the store's encrypted sessions (the one the
	// store was opened with). With it the export download writes them
	// sealed with their own data keys, as sessionctl export does (see
	// package archive); without it an export that meets an encrypted
	// session fails (store.ErrKeyUnavailable) rather than serve it in
	// plaintext. The pages read through the store and need no keyring.
	Keys store.KeyRing
}

// readOnlyReporter is implemented by the stores of both backends.
type readOnlyReporter interface{ ReadOnly() bool }

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// console is the handler New returns.
type console struct {
	st      store.Store
	opt     Options
	prefix  string
	log     *slog.Logger
	now     func() time.Time
	refresh time.Duration
	tenant  bool // Options.Tenant: agent-session pages only (tenant.go)
	// search is the search of /search: the store's (store.Searcher), or
	// the tenant's (tenant.go); nil when the store has none.
	search  func(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
	pages   map[string]*template.Template
	nav     []navItem
	mux     *http.ServeMux
	metrics http.Handler
}

// New returns the console's handler for st. It fails when the options are
// invalid, and with Options.ReadOnly when st is not read-only.
func New(st store.Store, opt Options) (http.Handler, error) {
	if st == nil {
		return nil, errors.New("console: nil store")
	}
	prefix, err := cleanPrefix(opt.Prefix)
	if err != nil {
		return nil, err
	}
	if opt.ReadOnly {
		ro, ok := st.(readOnlyReporter)
		if !ok || !ro.ReadOnly() {
			return nil, fmt.Errorf("console: %w: the store was not opened read-only (sqlstore.WithReadOnly, pgstore.WithReadOnly)", store.ErrInvalidInput)
		}
	}
	c := &console{st: st, opt: opt, prefix: prefix, log: opt.Logger, now: opt.Clock, refresh: opt.Refresh}
	if s, ok := st.(store.Searcher); ok {
		c.search = s.Search
	}
	if opt.Tenant != "" {
		if err := c.scopeToTenant(opt.Tenant); err != nil {
			return nil, err
		}
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.refresh == 0 {
		c.refresh = 5 * time.Second
	}
	if c.pages, err = parsePages(c.funcs()); err != nil {
		return nil, err
	}
	if c.metrics, err = c.newMetrics(opt.Registerer); err != nil {
		return nil, err
	}
	c.nav = c.navigation()
	c.routes()
	return c, nil
}

// cleanPrefix checks a mount prefix and returns it without a trailing
// slash ("" for the root).
func cleanPrefix(p string) (string, error) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", nil
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#{}\\ ") || strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") {
		return "", fmt.Errorf("console: %w: prefix %q must be a clean absolute path", store.ErrInvalidInput, p)
	}
	return p, nil
}

func (c *console) routes() {
	if c.tenant {
		c.tenantRoutes()
		return
	}
	m := http.NewServeMux()
	p := c.prefix
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		m.HandleFunc("GET "+p+pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				c.fail(w, r, err)
			}
		})
	}
	handle("/{$}", c.overview)
	for _, v := range c.facetViews() {
		for _, rt := range v.Routes {
			handle(rt.Pattern, rt.Handler)
		}
	}
	handle("/retention", c.retentionPage)
	handle("/go", c.goTo)
	handle("/search", c.searchPage)
	handle("/export", c.download)
	m.HandleFunc("GET "+p+"/healthz", c.healthz)
	m.Handle("GET "+p+"/metrics", c.metrics)
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", staticHandler(http.FileServerFS(static))))
	if p != "" {
		m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, errPageNotFound)
	})
	c.mux = m
}

// ServeHTTP sets the security headers of every response, refuses every
// method but GET and HEAD, and routes the request.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		h.Set("Cache-Control", "no-store")
		http.Error(w, "method not allowed: the console is read-only", http.StatusMethodNotAllowed)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// staticHandler serves the embedded assets with a short cache life.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

func (c *console) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, _, err := c.st.SchemaVersion(r.Context()); err != nil {
		c.log.Warn("console: health check failed", "err", err)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok\n")
}

// Errors of the console itself.
var (
	errPageNotFound = &store.NotFoundError{Resource: "page"}
	errBadRequest   = store.Invalid("request", "bad parameter")
)

// fail answers a failed request: a constant message per kind, the details
// to the log.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "the store could not answer"
	switch {
	case errors.Is(err, store.ErrNotFound):
		status, msg = http.StatusNotFound, "not found"
	case errors.Is(err, store.ErrInvalidInput):
		status, msg = http.StatusBadRequest, "bad request"
	case errors.Is(err, context.Canceled):
		return
	default:
		c.log.Error("console: request failed", "path", r.URL.Path, "err", err)
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidInput) {
		c.log.Debug("console: request refused", "path", r.URL.Path, "err", err)
	}
	data := errorPage{Status: status, Message: msg}
	var ie *store.InvalidInputError
	if errors.As(err, &ie) {
		data.Field, data.Reason = paramOf(r, ie.Field), ie.Reason
		data.Filters, data.RetryURL = c.keptFilters(r, data.Field)
	}
	c.render(w, r, status, "error", msg, "", data)
}

// errorPage is the page of a failed request. A bad parameter names its
// field and why, lists the user's filters (each cut to a readable length,
// the whole length stated) and links to the same page without the bad
// one, the others kept.
type errorPage struct {
	Status   int          `json:"status"`
	Message  string       `json:"error"`
	Field    string       `json:"field,omitempty"`
	Reason   string       `json:"reason,omitempty"`
	Filters  []filterEcho `json:"filters,omitempty"`
	RetryURL string       `json:"retry_url,omitempty"`
}

// filterEcho is one query parameter of a refused request, as the user
// gave it (cut to humanize.EchoMax characters).
type filterEcho struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// fieldParams maps the store's names of the fields of a request to the
// query parameters the console's forms send them as.
var fieldParams = map[string]string{"agent_id": "agent", "session_id": "session", "user_id": "user", "kinds": "kind"}

// paramOf is the query parameter of r that a refused field of the store
// came from, so that the page names what the user gave (agent, not
// agent_id) and drops it from the retry: field itself when r has no
// other.
func paramOf(r *http.Request, field string) string {
	q := r.URL.Query()
	if p, ok := fieldParams[field]; ok && !q.Has(field) && q.Has(p) {
		return p
	}
	return field
}

// keptFilters echoes r's query parameters and builds the URL of the same
// page without field's (the other filters kept; no paging cursor). A
// field that is not a query parameter (an id in the path) has no such
// page: the URL is then "".
func (c *console) keptFilters(r *http.Request, field string) ([]filterEcho, string) {
	q := r.URL.Query()
	var echo []filterEcho
	keep := url.Values{}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "format" {
			continue
		}
		for _, v := range q[k] {
			echo = append(echo, filterEcho{Name: humanize.Clip(k, humanize.EchoMax), Value: humanize.Clip(v, humanize.EchoMax)})
			if k != field && k != "after" && !(field == "query" && k == "q") {
				keep.Add(k, v)
			}
		}
	}
	if !q.Has(field) && !(field == "query" && q.Has("q")) {
		return echo, ""
	}
	retry := r.URL.EscapedPath()
	if len(keep) > 0 {
		retry += "?" + keep.Encode()
	}
	return echo, retry
}

// layout is what every page's template gets.
type layout struct {
	Title string
	// Nav is the key of the navigation entry the page belongs to;
	// Navigation is every entry (see facetViews).
	Nav        string
	Navigation []navItem
	Prefix     string
	JSONURL    string
	Refresh    int64  // seconds; 0 when the page is not live
	LiveURL    string // the page's server-sent events, when it follows a feed
	Backend    string
	ReadOnly   bool // the store reports that its database refuses writes
	Data       any
}

// render writes a page as HTML, or as JSON with ?format=json.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page, title, nav string, data any) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // <b> as it is: served as application/json, never as HTML
		if err := enc.Encode(data); err != nil {
			c.log.Error("console: encode JSON", "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(humanize.JSONChars(buf.Bytes())) // and the stored JSON's own escapes
		return
	}
	t := c.pages[page]
	// A title that holds an id (which can be the user's input) has it
	// cut by its caller (echo), so that the length stated is the id's.
	lay := layout{Title: title, Nav: nav, Navigation: c.nav, Prefix: c.prefix, JSONURL: jsonURL(r), Backend: c.st.Backend(), ReadOnly: c.storeReadOnly(), Data: data}
	if lv, ok := data.(interface{ live() bool }); ok && lv.live() && c.refresh > 0 {
		lay.Refresh = max(1, int64(c.refresh/time.Second))
		if lu, ok := data.(interface{ liveURL() string }); ok {
			lay.LiveURL = lu.liveURL()
		}
	}
	out, err := execute(t, "layout", lay)
	if err != nil {
		c.log.Error("console: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(out)
}

// storeReadOnly reports whether the store says its database refuses
// writes (for a tenant's console, the whole store under its view).
func (c *console) storeReadOnly() bool {
	st := c.st
	if v, ok := st.(store.TenantView); ok {
		st = v.Store
	}
	ro, ok := st.(readOnlyReporter)
	return ok && ro.ReadOnly()
}

// jsonURL is the request's URL with format=json.
func jsonURL(r *http.Request) string {
	q := r.URL.Query()
	q.Set("format", "json")
	return r.URL.EscapedPath() + "?" + q.Encode()
}

// link builds a path under the prefix from path segments, each escaped.
func (c *console) link(segs ...string) string {
	var b strings.Builder
	b.WriteString(c.prefix)
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// withQuery returns base with the query parameters kv (name, value
// pairs); empty values are left out.
func withQuery(base string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return base
	}
	return base + "?" + q.Encode()
}
