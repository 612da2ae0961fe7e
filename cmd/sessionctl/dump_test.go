package main

// A logical dump of a database: everything of every facet, read through
// the public store API, as one canonical JSON text per facet. Two
// databases with equal dumps hold the same data as far as any caller of
// the store can tell. The round-trip tests compare the dump of a database
// with the dump of its export imported elsewhere.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// dumpers reads one facet for the dump. Like maintenance, it must cover
// the registry (TestDumpCoversEveryFacet), so that a new facet cannot be
// left out of the round-trip comparison either.
var dumpers = map[facet.Name]func(ctx context.Context, g *globals, st cliStore) (any, error){
	facet.Governance:    dumpGoverned,
	facet.Runtime:       dumpRuntime,
	facet.Conversations: dumpConversations,
	facet.AgentSessions: dumpAgentSessions,
	facet.Audit:         dumpAudit,
}

// dumpAudit reads every chain: its head and its events, hashes included.
func dumpAudit(ctx context.Context, _ *globals, st cliStore) (any, error) {
	heads, err := st.Audit().Heads(ctx)
	if err != nil {
		return nil, err
	}
	var events []store.AuditEvent
	f := store.AuditFilter{Limit: store.MaxPageSize}
	for {
		page, err := st.Audit().List(ctx, f)
		if err != nil {
			return nil, err
		}
		events = append(events, page.Items...)
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	return map[string]any{"heads": heads, "events": events}, nil
}

// dump reads every facet of the env's database.
func (e *testEnv) dump() map[facet.Name]string {
	e.t.Helper()
	ctx := context.Background()
	g := &globals{db: e.db, now: e.clock.Now}
	st, err := g.openExisting(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	out := map[facet.Name]string{}
	for _, f := range facet.All() {
		fn := dumpers[f.Name]
		if fn == nil {
			e.t.Fatalf("no dumper for facet %s", f.Name)
		}
		v, err := fn(ctx, g, st)
		if err != nil {
			e.t.Fatalf("dump %s: %v", f.Name, err)
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			e.t.Fatal(err)
		}
		out[f.Name] = string(b)
	}
	return out
}

// sameDump fails unless two dumps are equal, showing the first lines that
// differ in each facet.
func sameDump(t *testing.T, what string, want, got map[facet.Name]string) {
	t.Helper()
	for _, f := range facet.All() {
		if want[f.Name] == got[f.Name] {
			continue
		}
		wl, gl := strings.Split(want[f.Name], "\n"), strings.Split(got[f.Name], "\n")
		i := 0
		for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
			i++
		}
		from := max(0, i-8)
		t.Errorf("%s: facet %s differs at line %d\n--- want\n%s\n--- got\n%s", what, f.Name, i+1,
			strings.Join(wl[from:min(len(wl), i+4)], "\n"), strings.Join(gl[from:min(len(gl), i+4)], "\n"))
	}
}

func dumpGoverned(ctx context.Context, _ *globals, st cliStore) (any, error) {
	var out []store.Session
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := st.Governance().List(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	spend, err := st.Spend().Export(ctx, nil)
	if err != nil {
		return nil, err
	}
	return map[string]any{"sessions": out, "spend": spend}, nil
}

// dumpedUpload is an upload entry and the digest of the content it reads.
type dumpedUpload struct {
	store.Upload
	ContentSHA256 string `json:"content_sha256"`
	ContentBytes  int    `json:"content_bytes"`
}

type dumpedRuntime struct {
	Session store.RuntimeSession `json:"session"`
	Uploads []dumpedUpload       `json:"uploads"`
}

func dumpRuntime(ctx context.Context, _ *globals, st cliStore) (any, error) {
	rt := st.Runtime()
	var out []dumpedRuntime
	req := store.ListIDsRequest{Limit: store.MaxPageSize}
	for {
		page, err := rt.ListIDs(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, id := range page.Items {
			s, err := rt.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			// Normalized: an imported turn is not running (docs/maintenance.md, import
			// --help: a turn belongs to the process that ran it), so the
			// process that owned it, its lease (and so its staleness) and a
			// cancel recorded for it are gone. Its generation and start time
			// are kept.
			s.Turn.Running, s.Turn.Owner, s.Turn.CancelCause = false, "", ""
			s.Turn.Stale, s.Turn.LeaseExpiresAt = false, time.Time{}
			d := dumpedRuntime{Session: s}
			ups, err := allUploads(ctx, st, id)
			if err != nil {
				return nil, err
			}
			for _, u := range ups {
				u, content, err := rt.ReadUpload(ctx, id, u.RefID)
				if err != nil {
					return nil, err
				}
				sum := sha256.Sum256(content)
				d.Uploads = append(d.Uploads, dumpedUpload{Upload: u, ContentSHA256: hex.EncodeToString(sum[:]), ContentBytes: len(content)})
			}
			out = append(out, d)
		}
		if page.Next == "" {
			return out, nil
		}
		req.After = page.Next
	}
}

type dumpedConversation struct {
	Conversation store.Conversation         `json:"conversation"`
	Summary      store.ConversationSummary  `json:"summary"`
	Artifacts    []store.Artifact           `json:"artifacts"`
	Traces       []store.TraceEvent         `json:"traces"`
	Runs         []store.RunRecord          `json:"runs"`
	Reports      []store.VerificationReport `json:"reports"`
}

func dumpConversations(ctx context.Context, _ *globals, st cliStore) (any, error) {
	conv := st.Conversations()
	var out []dumpedConversation
	f := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := conv.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, sum := range page.Items {
			var d dumpedConversation
			d.Summary = sum
			if d.Conversation, err = conv.Load(ctx, sum.ID); err != nil {
				return nil, err
			}
			if d.Artifacts, err = conv.Artifacts(ctx, sum.ID); err != nil {
				return nil, err
			}
			if d.Traces, err = conv.Traces(ctx, sum.ID, 0, 0); err != nil {
				return nil, err
			}
			if d.Runs, err = conv.Runs(ctx, sum.ID); err != nil {
				return nil, err
			}
			if d.Reports, err = conv.Reports(ctx, sum.ID); err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		if page.Next == "" {
			return out, nil
		}
		f.After = page.Next
	}
}

// dumpedEvent is an agent event with its data as text, so that the dump
// compares the bytes the store returns (json.RawMessage would be
// re-encoded).
type dumpedEvent struct {
	ID           string    `json:"id"`
	Seq          int64     `json:"seq"`
	InvocationID string    `json:"invocation_id"`
	Timestamp    time.Time `json:"timestamp"`
	Data         string    `json:"data"`
}

type dumpedAgentSession struct {
	Key        store.SessionKey  `json:"key"`
	Version    int64             `json:"version"`
	EventCount int64             `json:"event_count"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	State      map[string]string `json:"state"` // all three scopes, prefixed
	Events     []dumpedEvent     `json:"events"`
	// Paged holds the events again as ListEvents pages them.
	Paged []dumpedEvent `json:"paged"`
}

type dumpedAgent struct {
	AppState  map[string]map[string]string `json:"app_state"`
	UserState map[string]map[string]string `json:"user_state"`
	Sessions  []dumpedAgentSession         `json:"sessions"`
}

// text keeps state values as the text the store returns.
func text(prefix string, m map[string]json.RawMessage, into map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range m {
		into[prefix+k] = string(v)
	}
	return into
}

func dumpEvents(evs []store.AgentEvent) []dumpedEvent {
	var out []dumpedEvent
	for _, ev := range evs {
		out = append(out, dumpedEvent{ID: ev.ID, Seq: ev.Seq, InvocationID: ev.InvocationID, Timestamp: ev.Timestamp, Data: string(ev.Data)})
	}
	return out
}

// dumpAgentSessions reads agent sessions through store.AgentSessions.
func dumpAgentSessions(ctx context.Context, g *globals, st cliStore) (any, error) {
	as := st.AgentSessions()
	out := dumpedAgent{AppState: map[string]map[string]string{}, UserState: map[string]map[string]string{}}
	for app, err := range store.AllApps(ctx, as) {
		if err != nil {
			return nil, err
		}
		s, err := as.GetState(ctx, store.SessionKey{App: app})
		if err != nil {
			return nil, err
		}
		out.AppState[app] = text("", s.App, nil)
		for user, err := range store.AllUsers(ctx, as, app) {
			if err != nil {
				return nil, err
			}
			s, err := as.GetState(ctx, store.SessionKey{App: app, User: user})
			if err != nil {
				return nil, err
			}
			if len(s.User) > 0 {
				out.UserState[app+"\x00"+user] = text("", s.User, nil)
			}
		}
	}
	err := eachAgentSession(ctx, as, func(s store.AgentSession) error {
		full, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: s.Key, IncludeEvents: true})
		if err != nil {
			return err
		}
		d := dumpedAgentSession{Key: full.Key, Version: full.Version, EventCount: full.EventCount,
			CreatedAt: full.CreatedAt, UpdatedAt: full.UpdatedAt, Events: dumpEvents(full.Events)}
		d.State = text("app:", full.State.App, nil)
		d.State = text("user:", full.State.User, d.State)
		d.State = text("session:", full.State.Session, d.State)
		req := store.ListEventsRequest{Key: s.Key, Limit: 7}
		for {
			page, err := as.ListEvents(ctx, req)
			if err != nil {
				return err
			}
			d.Paged = append(d.Paged, dumpEvents(page.Items)...)
			if page.Next == "" {
				break
			}
			req.Cursor = page.Next
		}
		out.Sessions = append(out.Sessions, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachAgentSession calls fn for every agent session, in key order.
func eachAgentSession(ctx context.Context, as store.AgentSessions, fn func(store.AgentSession) error) error {
	for s, err := range store.AllAgentSessions(ctx, as) {
		if err == nil {
			err = fn(s)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
