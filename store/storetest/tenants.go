package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// RunTenants checks the tenant handles of a store (store.Tenanter): names
// are validated, every method of every facet a handle offers sees only its
// tenant's rows, writes through one tenant never touch another's rows or
// the default tenant's, and keys are unique per tenant.
func RunTenants(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		// Two stores in all (opening one migrates it: most of a subtest's
		// time under -race), each test on tenants and keys of its own.
		{"NamesAndAgentSessions", func(t *testing.T, e *env) {
			t.Run("InvalidNamesAreInvalidInput", func(t *testing.T) { testTenantNames(t, e) })
			t.Run("AgentSessionsSeeOnlyTheirTenant", func(t *testing.T) { testTenantAgentSessions(t, e) })
			t.Run("ConversationsSeeOnlyTheirTenant", func(t *testing.T) { testTenantConversations(t, e) })
			t.Run("SearchFindsOnlyTheTenantsItems", func(t *testing.T) { testTenantSearch(t, e) })
			t.Run("GovernanceSpendAuditSeeOnlyTheirTenant", func(t *testing.T) { testTenantGovernance(t, e) })
			// Last: its sweep removes every idle session of the store.
			t.Run("RetentionHoldsAndReadsAreTheTenants", func(t *testing.T) { testTenantRetention(t, e) })
		}},
		{"ConcurrencyAndFeed", func(t *testing.T, e *env) {
			t.Run("SameKeysConcurrentlyInTwoTenants", func(t *testing.T) { testTenantConcurrent(t, e) })
			t.Run("EventFeedFollowsTheTenantsSession", func(t *testing.T) { testTenantEventFeed(t, e) })
			t.Run("ConversationsConcurrentlyInTwoTenants", func(t *testing.T) { testTenantConversationsConcurrent(t, e) })
			t.Run("RuntimeSeesOnlyItsTenant", func(t *testing.T) { testTenantRuntime(t, e) })
			t.Run("UploadContentSharedWithinATenantOnly", func(t *testing.T) { testTenantUploadContent(t, e) })
			t.Run("CountsAndTotalsOfTheTenantOnly", func(t *testing.T) { testTenantAggregates(t, e) })
			t.Run("ConversationFeedFollowsTheTenantsConversation", func(t *testing.T) { testTenantConversationFeed(t, e) })
			t.Run("GovernedUseExactUnderContention", func(t *testing.T) { testTenantGovernedUseContention(t, e) })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

// tenant returns the handle of tenant name on the env's store.
func (e *env) tenant(t testing.TB, name string) store.TenantStore {
	t.Helper()
	tr, ok := e.st.(store.Tenanter)
	if !ok {
		t.Fatalf("%T does not implement store.Tenanter", e.st)
	}
	ts, err := tr.Tenant(name)
	if err != nil {
		t.Fatalf("Tenant(%q): %v", name, err)
	}
	if ts.Tenant() != name || ts.Backend() != e.st.Backend() {
		t.Fatalf("Tenant(%q) names %q on %q", name, ts.Tenant(), ts.Backend())
	}
	return ts
}

func testTenantNames(t *testing.T, e *env) {
	tr, ok := e.st.(store.Tenanter)
	if !ok {
		t.Fatalf("%T does not implement store.Tenanter", e.st)
	}
	for _, name := range []string{"", " acme", "acme ", "-acme", ".", "a/b", "a\x00b", "ä", strings.Repeat("a", store.MaxTenantLength+1)} {
		ts, err := tr.Tenant(name)
		if !errors.Is(err, store.ErrInvalidInput) || ts != nil {
			t.Errorf("Tenant(%q) = %v, %v; want nil, ErrInvalidInput", name, ts, err)
		}
	}
	for _, name := range []string{"acme", "A", "0", "acme-corp_eu.1", strings.Repeat("a", store.MaxTenantLength)} {
		if _, err := tr.Tenant(name); err != nil {
			t.Errorf("Tenant(%q): %v", name, err)
		}
	}
}

// tenantScope is one side of the isolation test: the default tenant (the
// store itself) or a tenant handle, with the marker its rows carry.
type tenantScope struct {
	name   string // "" for the default tenant
	marker string
	as     store.AgentSessions
}

// The keys every scope of the isolation test uses: the same in each.
var (
	tnKey   = store.SessionKey{App: "shared-app", User: "shared-user", Session: "shared-session"}
	tnOther = store.SessionKey{App: "shared-app", User: "shared-user", Session: "second-session"}
)

// tnSeed writes the same keys into scope sc, with values naming its marker:
// a session with app, user and session state and three events, a fork of
// it, a rewound and compacted second session, and an application of its
// own (only its scope has it).
func tnSeed(t *testing.T, e *env, sc tenantScope) {
	t.Helper()
	m := raw(sc.marker)
	st := store.ScopedState{
		App:     map[string]json.RawMessage{"who": m},
		User:    map[string]json.RawMessage{"who": m},
		Session: map[string]json.RawMessage{"who": m},
	}
	for _, k := range []store.SessionKey{tnKey, tnOther} {
		if _, err := sc.as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k, State: st}); err != nil {
			t.Fatalf("%s: create %v: %v", sc.marker, k, err)
		}
		for i := 1; i <= 3; i++ {
			ev := store.AgentEvent{ID: fmt.Sprintf("ev-%d", i), Data: raw(map[string]any{"text": sc.marker, "i": i})}
			if _, err := sc.as.AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: ev,
				Delta: store.ScopedState{Session: map[string]json.RawMessage{"step": raw(i)}}}); err != nil {
				t.Fatalf("%s: append to %v: %v", sc.marker, k, err)
			}
		}
	}
	if _, err := sc.as.Fork(e.ctx, store.ForkRequest{Key: tnKey, At: 2, Session: "shared-fork"}); err != nil {
		t.Fatalf("%s: fork: %v", sc.marker, err)
	}
	if _, err := sc.as.Rewind(e.ctx, store.RewindRequest{Key: tnOther, To: 1}); err != nil {
		t.Fatalf("%s: rewind: %v", sc.marker, err)
	}
	if _, err := sc.as.Compact(e.ctx, store.CompactRequest{Key: tnOther, Range: store.CompactionRange{From: 1, To: 1},
		Summary: store.AgentEvent{ID: "summary", Data: raw(map[string]any{"text": sc.marker})}}); err != nil {
		t.Fatalf("%s: compact: %v", sc.marker, err)
	}
	own := tnOwn(sc)
	if _, err := sc.as.UpdateState(e.ctx, store.UpdateStateRequest{Key: own,
		Delta: store.ScopedState{App: map[string]json.RawMessage{"who": m}, User: map[string]json.RawMessage{"who": m}}}); err != nil {
		t.Fatalf("%s: update state: %v", sc.marker, err)
	}
}

// tnOwn is the key of the application only scope sc has: named after the
// scope, not its marker (another tenant creating a session under the same
// application name is no leak).
func tnOwn(sc tenantScope) store.SessionKey {
	name := sc.name
	if name == "" {
		name = "default"
	}
	return store.SessionKey{App: "own-app-" + name, User: "own-user-" + name}
}

// tnDump reads everything scope sc can see through every read method of
// the facet, as text: the apps, their users and sessions, each session's
// events, state, superseded runs and tree.
func tnDump(t *testing.T, e *env, as store.AgentSessions) string {
	t.Helper()
	var b strings.Builder
	put := func(what string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", what, j)
	}
	apps, err := as.ListApps(e.ctx, store.ListAppsRequest{Limit: 1000})
	if err != nil {
		t.Fatalf("ListApps: %v", err)
	}
	put("apps", apps)
	for _, app := range apps.Items {
		users, err := as.ListUsers(e.ctx, store.ListUsersRequest{App: app, Limit: 1000})
		if err != nil {
			t.Fatalf("ListUsers: %v", err)
		}
		put("users", users)
		sessions, err := as.ListSessions(e.ctx, store.ListAgentSessionsRequest{App: app, Limit: 1000})
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		put("sessions", sessions)
		for _, u := range users.Items {
			byUser, err := as.ListSessions(e.ctx, store.ListAgentSessionsRequest{App: app, User: u, Limit: 1000})
			if err != nil {
				t.Fatalf("ListSessions by user: %v", err)
			}
			put("sessions of user", byUser)
			st, err := as.GetState(e.ctx, store.SessionKey{App: app, User: u})
			if err != nil {
				t.Fatalf("GetState: %v", err)
			}
			put("state", st)
		}
		for _, s := range sessions.Items {
			k := s.Key
			full, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true})
			if err != nil {
				t.Fatalf("GetSession %v: %v", k, err)
			}
			put("session", full)
			evs, err := as.ListEvents(e.ctx, store.ListEventsRequest{Key: k, Limit: 1000})
			if err != nil {
				t.Fatalf("ListEvents %v: %v", k, err)
			}
			put("events", evs)
			st, err := as.GetState(e.ctx, k)
			if err != nil {
				t.Fatalf("GetState %v: %v", k, err)
			}
			put("session state", st)
			runs, err := as.Superseded(e.ctx, k)
			if err != nil {
				t.Fatalf("Superseded %v: %v", k, err)
			}
			put("superseded", runs)
			tree, err := as.History(e.ctx, k)
			if err != nil {
				t.Fatalf("History %v: %v", k, err)
			}
			put("history", tree)
		}
	}
	return b.String()
}

// testTenantAgentSessions seeds the same keys in the default tenant and in
// tenants A and B, then calls every method of the agent-session facet
// through A: each read finds A's rows only, each write changes A's rows
// only, and B and the default tenant read exactly as before.
func testTenantAgentSessions(t *testing.T, e *env) {
	def := tenantScope{name: "", marker: "marker-default", as: e.as()}
	a := tenantScope{name: "tenant-a", marker: "marker-a", as: e.tenant(t, "tenant-a").AgentSessions()}
	b := tenantScope{name: "tenant-b", marker: "marker-b", as: e.tenant(t, "tenant-b").AgentSessions()}
	scopes := []tenantScope{def, a, b}
	for _, sc := range scopes {
		tnSeed(t, e, sc) // the same keys in each: no ErrConflict across tenants
	}
	before := map[string]string{}
	for _, sc := range scopes {
		before[sc.marker] = tnDump(t, e, sc.as)
		for _, other := range scopes {
			if other.marker != sc.marker && strings.Contains(before[sc.marker], other.marker) {
				t.Fatalf("%s reads rows of %s:\n%s", sc.marker, other.marker, before[sc.marker])
			}
		}
		if !strings.Contains(before[sc.marker], sc.marker) {
			t.Fatalf("%s does not read its own rows:\n%s", sc.marker, before[sc.marker])
		}
	}
	// Another handle on the same tenant sees the same rows.
	if got := tnDump(t, e, e.tenant(t, "tenant-a").AgentSessions()); got != before[a.marker] {
		t.Fatalf("a second handle of tenant-a reads\n%s\nwant\n%s", got, before[a.marker])
	}

	onlyA := func(t *testing.T, what string, v any) {
		t.Helper()
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{def.marker, b.marker} {
			if strings.Contains(string(j), other) {
				t.Errorf("%s through tenant-a returns a row of %s: %s", what, other, j)
			}
		}
	}
	m := raw(a.marker)
	// Every method of the facet through tenant A. Reads of keys only the
	// other scopes hold are ErrNotFound; the rest return A's rows.
	calls := []struct {
		name string
		fn   func(t *testing.T, as store.AgentSessions)
	}{
		{"GetSession", func(t *testing.T, as store.AgentSessions) {
			s, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: tnKey, IncludeEvents: true})
			if err != nil || len(s.Events) != 3 || s.Key != tnKey {
				t.Fatalf("GetSession = %+v, %v", s, err)
			}
			onlyA(t, "GetSession", s)
			for _, k := range []store.SessionKey{{App: "own-app-tenant-b", User: "own-user-tenant-b", Session: "x"}} {
				if _, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: k}); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("GetSession of another tenant's app: %v, want ErrNotFound", err)
				}
			}
		}},
		{"ListSessions", func(t *testing.T, as store.AgentSessions) {
			p, err := as.ListSessions(e.ctx, store.ListAgentSessionsRequest{App: tnKey.App, Limit: 100})
			if err != nil || len(p.Items) != 3 {
				t.Fatalf("ListSessions = %d sessions, %v; want 3", len(p.Items), err)
			}
			onlyA(t, "ListSessions", p)
			p, err = as.ListSessions(e.ctx, store.ListAgentSessionsRequest{App: tnKey.App, User: tnKey.User, Limit: 1})
			if err != nil || len(p.Items) != 1 || p.Next == "" {
				t.Fatalf("ListSessions page of 1 = %+v, %v", p, err)
			}
			onlyA(t, "ListSessions by user", p)
			if p, err = as.ListSessions(e.ctx, store.ListAgentSessionsRequest{App: "own-app-tenant-b", Limit: 100}); err != nil || len(p.Items) != 0 {
				t.Fatalf("ListSessions of another tenant's app = %+v, %v", p, err)
			}
		}},
		{"ListEvents", func(t *testing.T, as store.AgentSessions) {
			p, err := as.ListEvents(e.ctx, store.ListEventsRequest{Key: tnKey, Limit: 100})
			if err != nil || len(p.Items) != 3 {
				t.Fatalf("ListEvents = %+v, %v", p, err)
			}
			onlyA(t, "ListEvents", p)
		}},
		{"GetState", func(t *testing.T, as store.AgentSessions) {
			st, err := as.GetState(e.ctx, tnKey)
			if err != nil || string(st.App["who"]) != string(m) || string(st.User["who"]) != string(m) || string(st.Session["who"]) != string(m) {
				t.Fatalf("GetState = %+v, %v", st, err)
			}
			onlyA(t, "GetState", st)
			st, err = as.GetState(e.ctx, store.SessionKey{App: "own-app-default", User: "own-user-default"})
			if err != nil || len(st.App)+len(st.User) != 0 {
				t.Fatalf("GetState of the default tenant's app = %+v, %v; want empty", st, err)
			}
		}},
		{"ListAppsAndUsers", func(t *testing.T, as store.AgentSessions) {
			apps, err := as.ListApps(e.ctx, store.ListAppsRequest{Limit: 100})
			if err != nil || strings.Join(apps.Items, ",") != "own-app-tenant-a,shared-app" {
				t.Fatalf("ListApps = %q, %v", apps.Items, err)
			}
			users, err := as.ListUsers(e.ctx, store.ListUsersRequest{App: "own-app-tenant-b", Limit: 100})
			if err != nil || len(users.Items) != 0 {
				t.Fatalf("ListUsers of another tenant's app = %q, %v", users.Items, err)
			}
			users, err = as.ListUsers(e.ctx, store.ListUsersRequest{App: tnKey.App, Limit: 100})
			if err != nil || strings.Join(users.Items, ",") != tnKey.User {
				t.Fatalf("ListUsers = %q, %v", users.Items, err)
			}
		}},
		{"SupersededAndHistory", func(t *testing.T, as store.AgentSessions) {
			runs, err := as.Superseded(e.ctx, tnOther)
			if err != nil || len(runs) != 1 || len(runs[0].Events) != 2 {
				t.Fatalf("Superseded = %+v, %v", runs, err)
			}
			onlyA(t, "Superseded", runs)
			tree, err := as.History(e.ctx, tnKey)
			if err != nil || len(tree) != 2 {
				t.Fatalf("History = %+v, %v; want the session and its fork", tree, err)
			}
			onlyA(t, "History", tree)
		}},
		{"CreateExistingKeyIsConflictInTheTenantOnly", func(t *testing.T, as store.AgentSessions) {
			if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: tnKey}); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("CreateSession of an existing key = %v, want ErrConflict", err)
			}
			k := store.SessionKey{App: "own-app-tenant-b", User: "own-user-tenant-b", Session: "new"}
			if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
				t.Fatalf("CreateSession under another tenant's app: %v", err)
			}
		}},
		{"AppendEvent", func(t *testing.T, as store.AgentSessions) {
			res, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: tnKey,
				Event: store.AgentEvent{ID: "ev-4", Data: raw(map[string]any{"text": a.marker})},
				Delta: store.ScopedState{App: map[string]json.RawMessage{"n": raw(4)}, User: map[string]json.RawMessage{"n": raw(4)},
					Session: map[string]json.RawMessage{"n": raw(4)}}})
			if err != nil || res.Event.Seq != 4 || res.Replayed {
				t.Fatalf("AppendEvent = %+v, %v; want position 4 (A's own log)", res, err)
			}
			// An event id the other tenants used is new in A's other session.
			res, err = as.AppendEvent(e.ctx, store.AppendEventRequest{Key: tnOther,
				Event: store.AgentEvent{ID: "ev-3", Data: raw(map[string]any{"text": a.marker, "again": true})}})
			if err != nil || res.Replayed {
				t.Fatalf("AppendEvent of an id rewound away = %+v, %v", res, err)
			}
		}},
		{"UpdateState", func(t *testing.T, as store.AgentSessions) {
			if _, err := as.UpdateState(e.ctx, store.UpdateStateRequest{Key: tnKey, Delta: store.ScopedState{
				App: map[string]json.RawMessage{"who": raw("changed-a")}, User: map[string]json.RawMessage{"who": raw("changed-a")},
				Session: map[string]json.RawMessage{"who": raw("changed-a")}}}); err != nil {
				t.Fatalf("UpdateState: %v", err)
			}
			missing := store.SessionKey{App: "own-app-tenant-b", User: "own-user-tenant-b", Session: "nope"}
			if _, err := as.UpdateState(e.ctx, store.UpdateStateRequest{Key: missing,
				Delta: store.ScopedState{Session: map[string]json.RawMessage{"x": raw(1)}}}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("UpdateState of a missing session = %v, want ErrNotFound", err)
			}
		}},
		{"ForkRewindCompact", func(t *testing.T, as store.AgentSessions) {
			if _, err := as.Fork(e.ctx, store.ForkRequest{Key: tnKey, At: 1, Session: "second-fork"}); err != nil {
				t.Fatalf("Fork: %v", err)
			}
			if _, err := as.Fork(e.ctx, store.ForkRequest{Key: tnKey, At: 1, Session: "shared-fork"}); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Fork onto A's existing fork = %v, want ErrConflict", err)
			}
			if _, err := as.Rewind(e.ctx, store.RewindRequest{Key: tnKey, To: 2}); err != nil {
				t.Fatalf("Rewind: %v", err)
			}
			if _, err := as.Compact(e.ctx, store.CompactRequest{Key: tnKey, Range: store.CompactionRange{From: 1, To: 2},
				Summary: store.AgentEvent{ID: "summary-2", Data: raw(map[string]any{"text": a.marker})}}); err != nil {
				t.Fatalf("Compact: %v", err)
			}
		}},
		{"DeleteSession", func(t *testing.T, as store.AgentSessions) {
			for _, k := range []store.SessionKey{tnOther, {App: tnKey.App, User: tnKey.User, Session: "shared-fork"}} {
				if err := as.DeleteSession(e.ctx, k); err != nil {
					t.Fatalf("DeleteSession %v: %v", k, err)
				}
				if err := as.DeleteSession(e.ctx, k); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("second DeleteSession %v = %v, want ErrNotFound", k, err)
				}
			}
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) { c.fn(t, a.as) })
	}

	// Nothing A did reached B or the default tenant.
	for _, sc := range []tenantScope{def, b} {
		if got := tnDump(t, e, sc.as); got != before[sc.marker] {
			t.Errorf("%s changed by writes through tenant-a:\nnow\n%s\nbefore\n%s", sc.marker, got, before[sc.marker])
		}
	}
	after := tnDump(t, e, a.as)
	if after == before[a.marker] || !strings.Contains(after, "changed-a") {
		t.Errorf("tenant-a's writes are not visible to it:\n%s", after)
	}
	for _, other := range []string{def.marker, b.marker} {
		if strings.Contains(after, other) {
			t.Errorf("tenant-a reads rows of %s after its writes:\n%s", other, after)
		}
	}
}

// testTenantConcurrent: two tenants create the same keys and append to
// them from many goroutines at once; each tenant's sessions hold exactly
// its own appends, and the default tenant holds none of them.
func testTenantConcurrent(t *testing.T, e *env) {
	const sessions, writers, appends = 4, 4, 5
	names := []string{"t1", "t2"}
	key := func(i int) store.SessionKey {
		return store.SessionKey{App: "race-app", User: "race-user", Session: fmt.Sprintf("s%d", i)}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names)*sessions*(writers+1))
	for _, name := range names {
		as := e.tenant(t, name).AgentSessions()
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key(i)}); err != nil {
					errs <- fmt.Errorf("%s: create %d: %w", name, i, err)
					return
				}
				var inner sync.WaitGroup
				for w := range writers {
					inner.Add(1)
					go func() {
						defer inner.Done()
						for n := range appends {
							ev := store.AgentEvent{ID: fmt.Sprintf("w%d-%d", w, n), Data: raw(name)}
							if _, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key(i), Event: ev,
								Delta: store.ScopedState{App: map[string]json.RawMessage{"last": raw(name)}}}); err != nil {
								errs <- fmt.Errorf("%s: append to %d: %w", name, i, err)
								return
							}
						}
					}()
				}
				inner.Wait()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, name := range names {
		as := e.tenant(t, name).AgentSessions()
		for i := range sessions {
			s, err := as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: key(i), IncludeEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			if s.EventCount != writers*appends || len(s.Events) != writers*appends {
				t.Errorf("%s session %d: %d events (count %d), want %d", name, i, len(s.Events), s.EventCount, writers*appends)
			}
			for _, ev := range s.Events {
				if string(ev.Data) != string(raw(name)) {
					t.Errorf("%s session %d holds event %s of %s", name, i, ev.ID, ev.Data)
				}
			}
			if string(s.State.App["last"]) != string(raw(name)) {
				t.Errorf("%s: app state %s", name, s.State.App["last"])
			}
		}
	}
	p, err := e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: "race-app", Limit: 100})
	if err != nil || len(p.Items) != 0 {
		t.Fatalf("the default tenant lists %d of the tenants' sessions (%v)", len(p.Items), err)
	}
}

// testTenantEventFeed: a tenant's event feed of a key delivers that
// tenant's events only, while the default tenant and another tenant append
// to sessions under the same key; the store's own feed of the key follows
// the default tenant's session.
func testTenantEventFeed(t *testing.T, e *env) {
	key := store.SessionKey{App: "feed-app", User: "u", Session: "s"}
	a := e.tenant(t, "feed-a")
	sides := map[string]store.AgentSessions{"default": e.as(), "feed-a": a.AgentSessions(), "feed-b": e.tenant(t, "feed-b").AgentSessions()}
	for _, as := range sides {
		if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 3
	type followed struct {
		evs []store.AgentEvent
		err error
	}
	follow := func(seq iter.Seq2[store.Batch[store.AgentEvent], error]) chan followed {
		out := make(chan followed, 1)
		go func() {
			var f followed
			for b, err := range seq {
				if err != nil {
					f.err = err
					break
				}
				if f.evs = append(f.evs, b.Items...); len(f.evs) >= n {
					break
				}
			}
			out <- f
		}()
		return out
	}
	ctx, cancel := context.WithTimeout(e.ctx, crossStoreTimeout)
	defer cancel()
	gotA := follow(a.Events(ctx, store.EventFeed{Key: key}))
	gotDefault := follow(e.st.Feed().Events(ctx, store.EventFeed{Key: key}))
	for i := range n {
		for _, name := range []string{"feed-b", "default", "feed-a"} {
			ev := store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: raw(name)}
			if _, err := sides[name].AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, ch := range map[string]chan followed{"feed-a": gotA, "default": gotDefault} {
		f := <-ch
		evs := f.evs
		if f.err != nil || len(evs) != n {
			t.Fatalf("%s's feed delivered %d events (%v), want %d", name, len(evs), f.err, n)
		}
		for _, ev := range evs {
			if string(ev.Data) != string(raw(name)) {
				t.Errorf("%s's feed delivered event %s of %s", name, ev.ID, ev.Data)
			}
		}
	}
}
