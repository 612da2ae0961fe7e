package console

import (
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// pageLimit reads ?limit=, bounded to [1, max] (def when absent).
func pageLimit(r *http.Request, def, maxN int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, store.Invalid("limit", "must be a positive number")
	}
	return min(n, maxN), nil
}

// queryTime reads a time parameter: RFC 3339 or a date (YYYY-MM-DD).
func queryTime(r *http.Request, name string) (time.Time, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, store.Invalid(name, "must be a date (YYYY-MM-DD) or an RFC 3339 time")
}

// ---- governed sessions --------------------------------------------------

type governedListPage struct {
	Filter struct {
		Status string `json:"status,omitempty"`
		Agent  string `json:"agent,omitempty"`
		Tool   string `json:"tool,omitempty"`
		Since  string `json:"since,omitempty"`
		Until  string `json:"until,omitempty"`
	} `json:"filter"`
	Sessions []govSession `json:"sessions"`
	// Next is the cursor of the following page (the after parameter).
	Next    string `json:"next,omitempty"`
	NextURL string `json:"-"`
	// Now is the console's clock, which decides the effective status.
	Now time.Time `json:"now"`
}

// governedScanPages bounds the store pages one list request reads when
// filters the store does not apply (tool, time range) drop sessions.
const governedScanPages = 20

func (c *console) governedList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var p governedListPage
	p.Now = c.now().UTC()
	p.Filter.Status, p.Filter.Agent, p.Filter.Tool = q.Get("status"), q.Get("agent"), q.Get("tool")
	p.Filter.Since, p.Filter.Until = q.Get("since"), q.Get("until")
	limit, err := pageLimit(r, 50, store.MaxPageSize)
	if err != nil {
		return err
	}
	since, err := queryTime(r, "since")
	if err != nil {
		return err
	}
	until, err := queryTime(r, "until")
	if err != nil {
		return err
	}
	f := store.ListFilter{AgentID: p.Filter.Agent, Status: store.Status(p.Filter.Status), After: q.Get("after"), Limit: limit}
	p.Sessions = []govSession{}
	if err := c.scanGoverned(r, f, &p, since, until, limit); err != nil {
		return err
	}
	if p.Next != "" {
		p.NextURL = withQuery(c.link("governed"), "status", p.Filter.Status, "agent", p.Filter.Agent,
			"tool", p.Filter.Tool, "since", p.Filter.Since, "until", p.Filter.Until, "after", p.Next,
			"limit", q.Get("limit"))
	}
	c.render(w, r, http.StatusOK, "governed", "Governed sessions", "governed", &p)
	return nil
}

// scanGoverned fills p with up to limit sessions that pass the filters
// the store does not apply (tool, time range), reading at most
// governedScanPages pages of the store; p.Next resumes after what it read.
func (c *console) scanGoverned(r *http.Request, f store.ListFilter, p *governedListPage, since, until time.Time, limit int) error {
	show := c.showContent(r)
	for range governedScanPages {
		page, err := c.st.Governance().List(r.Context(), f)
		if err != nil {
			return err
		}
		for i, s := range page.Items {
			if p.Filter.Tool != "" && !s.ToolAuthorized(p.Filter.Tool) ||
				!since.IsZero() && s.CreatedAt.Before(since) ||
				!until.IsZero() && !s.CreatedAt.Before(until) {
				continue
			}
			s.DeclaredIntent = c.cleanText("governed.intent", s.DeclaredIntent, show)
			p.Sessions = append(p.Sessions, govSession{s})
			if len(p.Sessions) == limit {
				if i < len(page.Items)-1 || page.Next != "" {
					p.Next = s.ID
				}
				return nil
			}
		}
		if page.Next == "" {
			return nil
		}
		f.After = page.Next
	}
	p.Next = f.After // the scan's bound: the next page resumes here
	return nil
}

type governedDetailPage struct {
	Session govSession `json:"session"`
	// Effective is the status at the console's clock.
	Effective store.Status  `json:"effective_status"`
	Now       time.Time     `json:"now"`
	Gauges    template.HTML `json:"-"`
	BurnDown  template.HTML `json:"-"`
	// Uses is every recorded use with a request id, oldest first, when
	// the store keeps them (see store.UseRecorder).
	Uses []store.UseRecord `json:"uses"`
	// Spend is the session's spend: its limits and its agent's, and its
	// live reservations.
	Spend spendView `json:"spend"`
	// Audit is a page of the session's audit events (every decision
	// about it, allowed or refused), oldest first.
	Audit        []auditEvent `json:"audit"`
	AuditNextURL string       `json:"-"`
	// LiveURL streams the session's changes (see liveGoverned).
	LiveURL string `json:"-"`
}

func (p *governedDetailPage) liveURL() string { return p.LiveURL }

func (p *governedDetailPage) live() bool { return p.Effective == store.StatusActive }

func (c *console) governedDetail(w http.ResponseWriter, r *http.Request) error {
	s, err := c.st.Governance().Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	now := c.now()
	s.DeclaredIntent = c.cleanText("governed.intent", s.DeclaredIntent, c.showContent(r))
	p := &governedDetailPage{Session: govSession{s}, Effective: s.EffectiveStatus(now), Now: now.UTC(), Uses: []store.UseRecord{}}
	if ur, ok := c.st.Governance().(store.UseRecorder); ok {
		uses, err := ur.UseRecords(r.Context(), store.UseRecordsRequest{SessionID: s.ID, Limit: store.MaxPageSize})
		if err != nil {
			return err
		}
		p.Uses = auditNamed(uses.Items)
	}
	if p.Spend, err = c.sessionSpend(r.Context(), s); err != nil {
		return err
	}
	if p.Audit, p.AuditNextURL, err = c.sessionAudit(r.Context(), r, s); err != nil {
		return err
	}
	p.Gauges = governedGauges(s, now)
	p.BurnDown = burnDownChart(s, p.Uses, now)
	p.LiveURL = withQuery(c.link("live", "governed", s.ID), "after", strconv.FormatInt(s.FeedSeq(), 10))
	c.render(w, r, http.StatusOK, "governed_detail", "Governed session "+echo(s.ID), "governed", p)
	return nil
}

// ---- conversations -------------------------------------------------------

type conversationListPage struct {
	Conversations convList `json:"conversations"`
	Next          string   `json:"next,omitempty"`
	Parent        string   `json:"parent,omitempty"`
	NextURL       string   `json:"-"`
}

func (c *console) conversationList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := pageLimit(r, 50, store.MaxPageSize)
	if err != nil {
		return err
	}
	page, err := c.st.Conversations().List(r.Context(), store.ConversationFilter{ParentID: q.Get("parent"), After: q.Get("after"), Limit: limit})
	if err != nil {
		return err
	}
	p := &conversationListPage{Conversations: page.Items, Next: page.Next, Parent: q.Get("parent")}
	show := c.showContent(r)
	for i := range p.Conversations {
		p.Conversations[i].Name = c.cleanText("conversation.name", p.Conversations[i].Name, show)
	}
	if p.Next != "" {
		p.NextURL = withQuery(c.link("conversations"), "parent", p.Parent, "after", p.Next, "limit", q.Get("limit"))
	}
	c.render(w, r, http.StatusOK, "conversations", "Conversations", "conversations", p)
	return nil
}

type conversationPage struct {
	Conversation  convJSON                   `json:"conversation"`
	Messages      []store.Message            `json:"messages"`
	From          int64                      `json:"from"`
	Limit         int                        `json:"limit"`
	Total         int64                      `json:"message_count"`
	ContentHidden bool                       `json:"content_hidden"`
	Artifacts     []store.Artifact           `json:"artifacts"`
	Traces        []store.TraceEvent         `json:"traces"`
	Runs          []store.RunRecord          `json:"runs"`
	Reports       []store.VerificationReport `json:"reports"`
	// Tree is the conversation's fork tree (branches.go).
	Tree []convTreeRow `json:"tree"`

	Views       []messageView `json:"-"`
	FirstURL    string        `json:"-"`
	PrevURL     string        `json:"-"`
	NextURL     string        `json:"-"`
	LastURL     string        `json:"-"`
	ShowURL     string        `json:"-"`
	DownloadURL string        `json:"-"`
	TraceChart  template.HTML `json:"-"`
	AtEnd       bool          `json:"-"`
	LiveURL     string        `json:"-"`
}

func (p *conversationPage) liveURL() string { return p.LiveURL }

func (p *conversationPage) live() bool { return p.AtEnd }

// conversationDetail shows one page of messages: ?from=SEQ (oldest
// first), ?before=SEQ (the page before), or ?last (the default: the most
// recent page).
func (c *console) conversationDetail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	conv := c.st.Conversations()
	info, err := conv.Info(ctx, id)
	if err != nil {
		return err
	}
	limit, err := pageLimit(r, 100, store.MaxMessagePage)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var msgs []store.Message
	switch {
	case q.Get("from") != "":
		from, perr := strconv.ParseInt(q.Get("from"), 10, 64)
		if perr != nil || from < 0 {
			return store.Invalid("from", "must be a message position")
		}
		msgs, err = conv.Messages(ctx, id, from, limit)
	case q.Get("before") != "":
		before, perr := strconv.ParseInt(q.Get("before"), 10, 64)
		if perr != nil || before < 0 {
			return store.Invalid("before", "must be a message position")
		}
		msgs, err = conv.MessagesBefore(ctx, id, before, limit)
	default:
		msgs, err = conv.LastMessages(ctx, id, limit)
	}
	if err != nil {
		return err
	}
	show := c.showContent(r)
	info.Name = c.cleanText("conversation.name", info.Name, show)
	p := &conversationPage{Conversation: convJSON{info}, Limit: limit, Total: info.MessageCount, ContentHidden: !show, Messages: make([]store.Message, len(msgs))}
	for i, m := range msgs {
		p.Messages[i] = c.cleanMessage(m, show)
		p.Views = append(p.Views, newMessageView(id, p.Messages[i]))
	}
	nodes, err := conv.History(ctx, id)
	if err != nil {
		return err
	}
	p.Tree = c.convTree(nodes)
	if p.Artifacts, err = conv.Artifacts(ctx, id); err != nil {
		return err
	}
	for i := range p.Artifacts {
		p.Artifacts[i].Content = c.cleanText("artifact.content", p.Artifacts[i].Content, show)
	}
	if p.Traces, err = conv.Traces(ctx, id, 0, 1000); err != nil {
		return err
	}
	if p.Runs, err = conv.Runs(ctx, id); err != nil {
		return err
	}
	for i := range p.Runs {
		s := &p.Runs[i].Snapshot
		s.Prompt = c.cleanText("run.prompt", s.Prompt, show)
		s.ResultText = c.cleanText("run.result", s.ResultText, show)
		for j := range p.Runs[i].Events {
			if show {
				p.Runs[i].Events[j].Event = c.redactJSON("run.event", p.Runs[i].Events[j].Event)
			} else {
				p.Runs[i].Events[j].Event = hiddenJSON
			}
		}
	}
	if p.Reports, err = conv.Reports(ctx, id); err != nil {
		return err
	}
	base := c.link("conversations", id)
	lim := q.Get("limit")
	content := ""
	if show && c.opt.HideContent {
		content = "show"
	}
	if len(msgs) > 0 {
		first, last := msgs[0].Seq, msgs[len(msgs)-1].Seq
		p.From = first
		p.FirstURL = withQuery(base, "from", "0", "limit", lim, "content", content)
		p.LastURL = withQuery(base, "limit", lim, "content", content)
		// A trimmed conversation's first message is not position 0: the
		// older pages exist only if a message precedes this one.
		older, err := conv.MessagesBefore(ctx, id, first, 1)
		if err != nil {
			return err
		}
		if len(older) > 0 {
			p.PrevURL = withQuery(base, "before", strconv.FormatInt(first, 10), "limit", lim, "content", content)
		}
		more, err := conv.Messages(ctx, id, last+1, 1)
		if err != nil {
			return err
		}
		if len(more) > 0 {
			p.NextURL = withQuery(base, "from", strconv.FormatInt(last+1, 10), "limit", lim, "content", content)
		}
	}
	p.AtEnd = p.NextURL == ""
	after := ""
	if len(msgs) > 0 {
		after = strconv.FormatInt(msgs[len(msgs)-1].Seq, 10)
	}
	p.LiveURL = withQuery(c.link("live", "conversations", id, "messages"), "after", after, "content", content)
	if !show {
		p.ShowURL = withQuery(base, "from", q.Get("from"), "before", q.Get("before"), "limit", lim, "content", "show")
	}
	p.DownloadURL = withQuery(c.link("conversations", id, "messages.json"), "from", strconv.FormatInt(p.From, 10), "limit", strconv.Itoa(limit), "content", content)
	p.TraceChart = traceChart(p.Traces)
	c.render(w, r, http.StatusOK, "conversation", "Conversation "+echo(id), "conversations", p)
	return nil
}

type messagePage struct {
	ConversationID string        `json:"conversation_id"`
	Message        store.Message `json:"message"`
	View           messageView   `json:"-"`
	BackURL        string        `json:"-"`
	DownloadURL    string        `json:"-"`
}

// messageDetail shows one message whole, untruncated.
func (c *console) messageDetail(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 0 {
		return errPageNotFound
	}
	msgs, err := c.st.Conversations().Messages(r.Context(), id, seq, 1)
	if err != nil {
		return err
	}
	if len(msgs) == 0 || msgs[0].Seq != seq {
		return &store.NotFoundError{Resource: "message", ID: id}
	}
	m := c.cleanMessage(msgs[0], c.showContent(r))
	p := &messagePage{ConversationID: id, Message: m, View: newMessageView(id, m),
		BackURL:     withQuery(c.link("conversations", id), "from", strconv.FormatInt(seq, 10)),
		DownloadURL: withQuery(c.link("conversations", id, "messages.json"), "from", strconv.FormatInt(seq, 10), "limit", "1", "content", r.URL.Query().Get("content"))}
	c.render(w, r, http.StatusOK, "message", "Message "+strconv.FormatInt(seq, 10), "conversations", p)
	return nil
}

// messagesDownload serves a page of messages as a JSON file attachment.
func (c *console) messagesDownload(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	from, err := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if err != nil || from < 0 {
		from = 0
	}
	limit, err := pageLimit(r, store.MaxMessagePage, store.MaxMessagePage)
	if err != nil {
		return err
	}
	msgs, err := c.st.Conversations().Messages(r.Context(), id, from, limit)
	if err != nil {
		return err
	}
	show := c.showContent(r)
	for i := range msgs {
		msgs[i] = c.cleanMessage(msgs[i], show)
	}
	w.Header().Set("Content-Disposition", attachment("messages-"+id+"-"+strconv.FormatInt(from, 10)+".json"))
	q := r.URL.Query()
	q.Set("format", "json")
	r.URL.RawQuery = q.Encode()
	c.render(w, r, http.StatusOK, "", "", "", struct {
		ConversationID string          `json:"conversation_id"`
		Messages       []store.Message `json:"messages"`
	}{id, msgs})
	return nil
}

// attachment is a Content-Disposition that downloads under a safe name.
func attachment(name string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, name)
	if len(safe) > 120 {
		safe = safe[:120]
	}
	return `attachment; filename="` + safe + `"`
}

// ---- runtime sessions ----------------------------------------------------

type runtimeListPage struct {
	Sessions rtList           `json:"sessions"`
	Count    int64            `json:"count"`
	ByAgent  map[string]int64 `json:"by_agent"`
	Next     string           `json:"next,omitempty"`
	NextURL  string           `json:"-"`
	Agents   []string         `json:"-"`
}

func (c *console) runtimeList(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	limit, err := pageLimit(r, 50, 200)
	if err != nil {
		return err
	}
	rt := c.st.Runtime()
	page, err := store.ListRuntimeSessionsPage(ctx, rt, store.RuntimeSessionsPageRequest{After: r.URL.Query().Get("after"), Limit: limit})
	if err != nil {
		return err
	}
	p := &runtimeListPage{Sessions: page.Items, Next: page.Next}
	if p.Count, err = rt.Count(ctx); err != nil {
		return err
	}
	if p.ByAgent, err = rt.CountByAgent(ctx); err != nil {
		return err
	}
	for a := range p.ByAgent {
		p.Agents = append(p.Agents, a)
	}
	slices.Sort(p.Agents)
	if p.Next != "" {
		p.NextURL = withQuery(c.link("runtime"), "after", p.Next, "limit", r.URL.Query().Get("limit"))
	}
	c.render(w, r, http.StatusOK, "runtime", "Runtime sessions", "runtime", p)
	return nil
}

type runtimeDetailPage struct {
	Session    rtJSON         `json:"session"`
	HistoryLen int64          `json:"history_len"`
	Uploads    []store.Upload `json:"uploads"`
	Next       string         `json:"next_upload,omitempty"`
	NextURL    string         `json:"-"`
	HasConv    bool           `json:"-"`
}

// live: a running turn's page follows it; a stale one has nobody
// working on it.
func (p *runtimeDetailPage) live() bool { return p.Session.Turn.Running && !p.Session.Turn.Stale }

func (c *console) runtimeDetail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	rt := c.st.Runtime()
	s, err := rt.Get(ctx, id)
	if err != nil {
		return err
	}
	p := &runtimeDetailPage{Session: rtJSON{s}}
	if p.HistoryLen, err = rt.HistoryLen(ctx, id); err != nil {
		return err
	}
	p.HasConv = p.HistoryLen > 0
	ups, err := rt.ListUploads(ctx, store.ListUploadsRequest{SessionID: id, After: r.URL.Query().Get("after"), Limit: 100})
	if err != nil {
		return err
	}
	p.Uploads, p.Next = ups.Items, ups.Next
	if p.Next != "" {
		p.NextURL = withQuery(c.link("runtime", id), "after", p.Next)
	}
	c.render(w, r, http.StatusOK, "runtime_detail", "Runtime session "+echo(id), "runtime", p)
	return nil
}

// uploadDownload serves an upload's bytes, always as an attachment of an
// opaque type, never inline.
func (c *console) uploadDownload(w http.ResponseWriter, r *http.Request) error {
	if !c.showContent(r) {
		return store.Invalid("content", "content is hidden: add content=show")
	}
	u, data, err := c.st.Runtime().ReadUpload(r.Context(), r.PathValue("id"), r.PathValue("ref"))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", attachment(u.RefID))
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
	return nil
}

// ---- agent sessions ------------------------------------------------------

// agentListPage is /agents: without an app, the applications (paged)
// with the first users of each; with ?app=, the app's users (paged) and
// its sessions, or one user's (?user=).
type agentListPage struct {
	App  string `json:"app,omitempty"`
	User string `json:"user,omitempty"`
	// Apps are a page of the applications, when no app is named.
	Apps     []agentApp `json:"apps,omitempty"`
	NextApps string     `json:"next_apps,omitempty"`
	// Users are a page of the app's users, when an app is named.
	Users     []string `json:"users,omitempty"`
	NextUsers string   `json:"next_users,omitempty"`
	// Sessions are a page of the app's (or the user's) sessions.
	Sessions []store.AgentSession `json:"sessions"`
	Next     string               `json:"next,omitempty"`

	NextAppsURL  string `json:"-"`
	NextUsersURL string `json:"-"`
	NextURL      string `json:"-"`
}

// agentApp is one application of the list, with its first users.
type agentApp struct {
	App   string   `json:"app"`
	Users []string `json:"users"`
	// MoreUsers is true when the app has more users than Users.
	MoreUsers bool `json:"more_users,omitempty"`
}

// appUsersShown is how many users of each app the list of apps shows.
const appUsersShown = 5

func (c *console) agentList(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	p := &agentListPage{App: q.Get("app"), User: q.Get("user"), Sessions: []store.AgentSession{}}
	limit, err := pageLimit(r, 50, store.MaxPageSize)
	if err != nil {
		return err
	}
	as := c.st.AgentSessions()
	if p.App == "" {
		apps, err := as.ListApps(ctx, store.ListAppsRequest{Cursor: q.Get("apps_after"), Limit: limit})
		if err != nil {
			return err
		}
		p.Apps, p.NextApps = []agentApp{}, apps.Next
		for _, app := range apps.Items {
			users, err := as.ListUsers(ctx, store.ListUsersRequest{App: app, Limit: appUsersShown})
			if err != nil {
				return err
			}
			p.Apps = append(p.Apps, agentApp{App: app, Users: users.Items, MoreUsers: users.Next != ""})
		}
		if p.NextApps != "" {
			p.NextAppsURL = withQuery(c.link("agents"), "apps_after", p.NextApps, "limit", q.Get("limit"))
		}
		c.render(w, r, http.StatusOK, "agents", "Agent sessions", "agents", p)
		return nil
	}
	if p.User == "" {
		users, err := as.ListUsers(ctx, store.ListUsersRequest{App: p.App, Cursor: q.Get("users_after"), Limit: limit})
		if err != nil {
			return err
		}
		p.Users, p.NextUsers = users.Items, users.Next
		if p.NextUsers != "" {
			p.NextUsersURL = withQuery(c.link("agents"), "app", p.App, "users_after", p.NextUsers, "limit", q.Get("limit"))
		}
	}
	page, err := as.ListSessions(ctx, store.ListAgentSessionsRequest{App: p.App, User: p.User, Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	p.Sessions, p.Next = page.Items, page.Next
	for i := range p.Sessions {
		p.Sessions[i].State = store.ScopedState{}
	}
	if p.Next != "" {
		p.NextURL = withQuery(c.link("agents"), "app", p.App, "user", p.User, "cursor", p.Next, "limit", q.Get("limit"))
	}
	title := "Agent sessions of " + echo(p.App)
	if p.User != "" {
		title += " / " + echo(p.User)
	}
	c.render(w, r, http.StatusOK, "agents", title, "agents", p)
	return nil
}

type agentDetailPage struct {
	Session    store.AgentSession `json:"session"`
	Merged     map[string]any     `json:"merged_state"`
	Events     []store.AgentEvent `json:"events"`
	Invocation string             `json:"invocation,omitempty"`
	Next       string             `json:"next,omitempty"`
	NextURL    string             `json:"-"`
	MergedView []kv               `json:"-"`
	LiveURL    string             `json:"-"`
	// Tree is the session's fork tree (branches.go); Summarised the
	// compaction records of its view.
	Tree       []treeRow    `json:"tree"`
	Summarised []summarised `json:"summarised"`
}

func (p *agentDetailPage) liveURL() string { return p.LiveURL }

type kv struct{ Key, Value string }

func (p *agentDetailPage) live() bool { return p.Next == "" }

func (c *console) agentDetail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	key := store.SessionKey{App: q.Get("app"), User: q.Get("user"), Session: q.Get("session")}
	as := c.st.AgentSessions()
	s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
	if err != nil {
		return err
	}
	limit, err := pageLimit(r, 100, store.MaxPageSize)
	if err != nil {
		return err
	}
	ev, err := as.ListEvents(ctx, store.ListEventsRequest{Key: key, Cursor: q.Get("cursor"), InvocationID: q.Get("invocation"), Limit: limit})
	if err != nil {
		return err
	}
	show := c.showContent(r)
	s.State.App = c.cleanState("state.app", s.State.App, show)
	s.State.User = c.cleanState("state.user", s.State.User, show)
	s.State.Session = c.cleanState("state.session", s.State.Session, show)
	p := &agentDetailPage{Session: s, Events: ev.Items, Invocation: q.Get("invocation"), Next: ev.Next, Merged: map[string]any{}}
	nodes, err := as.History(ctx, key)
	if err != nil {
		return err
	}
	p.Tree, p.Summarised = c.agentTree(nodes)
	for i := range p.Events {
		if show {
			p.Events[i].Data = c.redactJSON("event.data", p.Events[i].Data)
		} else {
			p.Events[i].Data = hiddenJSON
		}
	}
	merged := store.DefaultStatePrefixes.Merge(s.State)
	keys := make([]string, 0, len(merged))
	for k, v := range merged {
		p.Merged[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p.MergedView = append(p.MergedView, kv{k, prettyJSON(merged[k])})
	}
	if p.Next != "" {
		p.NextURL = withQuery(c.link("agents", "session"), "app", key.App, "user", key.User, "session", key.Session,
			"invocation", p.Invocation, "cursor", p.Next, "limit", q.Get("limit"))
	}
	if p.Next == "" && p.Invocation == "" {
		after := ""
		if n := len(p.Events); n > 0 {
			after = strconv.FormatInt(p.Events[n-1].Seq, 10)
		}
		content := ""
		if show && c.opt.HideContent {
			content = "show"
		}
		p.LiveURL = withQuery(c.link("live", "agents", "events"), "app", key.App, "user", key.User, "session", key.Session, "after", after, "content", content)
	}
	c.render(w, r, http.StatusOK, "agent_detail", "Agent session "+echo(key.Session), "agents", p)
	return nil
}
