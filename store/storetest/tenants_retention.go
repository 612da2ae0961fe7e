package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// testTenantRetention calls every method of the retention facet through a
// tenant handle. Holds and reads are the tenant's: the default tenant and
// two tenants hold the same agent-session key and conversation ids, and
// each lists and releases only its own; the operator's methods (policies,
// sweeps, their log and lease) fail with ErrInvalidInput and change
// nothing. Then the store's own sweep honours each tenant's holds and
// reads for that tenant's sessions only: tenant a holds a key that tenant
// b has unheld, and only b's session goes.
//
// It runs last in its group: its sweep removes every session of the
// store that is idle, the other tests' too.
func testTenantRetention(t *testing.T, e *env) {
	ta, tb := e.tenant(t, "ret-a"), e.tenant(t, "ret-b")
	def := e.ret()
	ra, rb := ta.Retention(), tb.Retention()
	key := store.SessionKey{App: "ret-app", User: "ret-user", Session: "held"}
	read := store.SessionKey{App: "ret-app", User: "ret-user", Session: "read"}
	agentRef := func(k store.SessionKey) store.SessionRef {
		return store.SessionRef{Facet: store.HoldAgentSessions, App: k.App, UserID: k.User, ID: k.Session}
	}
	convRef := func(id string) store.SessionRef { return store.SessionRef{Facet: store.HoldConversations, ID: id} }
	for _, as := range []store.AgentSessions{ta.AgentSessions(), tb.AgentSessions(), e.as()} {
		for _, k := range []store.SessionKey{key, read} {
			if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
				t.Fatalf("CreateSession %v: %v", k, err)
			}
		}
	}
	for _, c := range []struct {
		conv store.Conversations
		id   string
	}{{ta.Conversations(), "ret-conv-a"}, {tb.Conversations(), "ret-conv-b"}, {e.conv(), "ret-conv-def"}} {
		s := fullSession(c.id)
		s.CreatedAt, s.UpdatedAt = time.Time{}, time.Time{}
		if _, err := c.conv.Save(e.ctx, s); err != nil {
			t.Fatalf("Save(%q): %v", c.id, err)
		}
	}
	policies := []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour},
		{Kind: store.PolicyMessagesKeepLast, KeepLast: 1000}}
	for _, p := range policies {
		if err := def.SetPolicy(e.ctx, p); err != nil {
			t.Fatalf("SetPolicy: %v", err)
		}
	}
	if err := def.TakeLease(e.ctx, "operator", time.Hour); err != nil {
		t.Fatalf("TakeLease: %v", err)
	}
	sweepsBefore, err := def.Sweeps(e.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}

	holdsOf := func(t *testing.T, r store.Retention) string {
		t.Helper()
		hs, err := r.Holds(e.ctx)
		if err != nil {
			t.Fatalf("Holds: %v", err)
		}
		s := ""
		for _, h := range hs {
			s += fmt.Sprintf("%s (%s); ", h.SessionRef, h.Reason)
		}
		return s
	}
	invalid := func(t *testing.T, what string, err error) {
		t.Helper()
		var ie *store.InvalidInputError
		if !errors.Is(err, store.ErrInvalidInput) || !errors.As(err, &ie) || ie.Field != "tenant" {
			t.Fatalf("%s through a tenant handle = %v, want ErrInvalidInput on field tenant", what, err)
		}
	}
	// Every method of the facet through tenant a.
	calls := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"HoldReleaseHoldsAreTheTenants", func(t *testing.T) {
			// The same refs in three tenants: no conflict, three holds.
			for _, h := range []struct {
				r      store.Retention
				reason string
			}{{def, "def"}, {ra, "a"}, {rb, "b"}} {
				for _, ref := range []store.SessionRef{agentRef(key), convRef("ret-conv-a"), convRef("ret-conv-b")} {
					if err := h.r.Hold(e.ctx, ref, h.reason); err != nil {
						t.Fatalf("Hold(%v) by %s: %v", ref, h.reason, err)
					}
				}
			}
			// Holding again replaces the tenant's reason only.
			if err := ra.Hold(e.ctx, agentRef(key), "a again"); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"def": "agent_sessions ret-app/ret-user/held (def); conversations ret-conv-a (def); conversations ret-conv-b (def); ",
				"a":   "agent_sessions ret-app/ret-user/held (a again); conversations ret-conv-a (a); conversations ret-conv-b (a); ",
				"b":   "agent_sessions ret-app/ret-user/held (b); conversations ret-conv-a (b); conversations ret-conv-b (b); ",
			}
			for name, r := range map[string]store.Retention{"def": def, "a": ra, "b": rb} {
				if got := holdsOf(t, r); got != want[name] {
					t.Fatalf("Holds of %s = %s\nwant %s", name, got, want[name])
				}
			}
			// Release through a removes a's hold only; b keeps only
			// the hold of its own session, the default tenant none.
			for _, rel := range []struct {
				r   store.Retention
				ref store.SessionRef
			}{{ra, convRef("ret-conv-a")}, {rb, agentRef(key)}, {rb, convRef("ret-conv-a")},
				{def, agentRef(key)}, {def, convRef("ret-conv-a")}, {def, convRef("ret-conv-b")}} {
				if ok, err := rel.r.Release(e.ctx, rel.ref); err != nil || !ok {
					t.Fatalf("Release(%v) = %v, %v", rel.ref, ok, err)
				}
				if ok, err := rel.r.Release(e.ctx, rel.ref); err != nil || ok {
					t.Fatalf("second Release(%v) = %v, %v; want false", rel.ref, ok, err)
				}
			}
			want = map[string]string{
				"def": "",
				"a":   "agent_sessions ret-app/ret-user/held (a again); conversations ret-conv-b (a); ",
				"b":   "conversations ret-conv-b (b); ",
			}
			for name, r := range map[string]store.Retention{"def": def, "a": ra, "b": rb} {
				if got := holdsOf(t, r); got != want[name] {
					t.Fatalf("after Release, Holds of %s = %s\nwant %s", name, got, want[name])
				}
			}
			if err := ra.Hold(e.ctx, store.SessionRef{Facet: "nope", ID: "x"}, ""); !errors.Is(err, store.ErrInvalidInput) {
				t.Fatalf("Hold of a bad ref = %v, want ErrInvalidInput", err)
			}
		}},
		{"AccessedIsTheTenants", func(t *testing.T) {
			if err := ra.Accessed(e.ctx, agentRef(read)); err != nil {
				t.Fatalf("Accessed of a's own session: %v", err)
			}
			if err := ra.Accessed(e.ctx, convRef("ret-conv-a")); err != nil {
				t.Fatalf("Accessed of a's own conversation: %v", err)
			}
			for _, id := range []string{"ret-conv-b", "ret-conv-def", "ret-missing"} {
				if err := ra.Accessed(e.ctx, convRef(id)); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("Accessed of conversation %s through a = %v, want ErrNotFound", id, err)
				}
			}
			if err := ra.Accessed(e.ctx, agentRef(store.SessionKey{App: "ret-app", User: "ret-user", Session: "nope"})); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Accessed of a missing session = %v, want ErrNotFound", err)
			}
		}},
		{"PoliciesAreTheStores", func(t *testing.T) {
			got, err := ra.Policies(e.ctx)
			if err != nil {
				t.Fatalf("Policies: %v", err)
			}
			want, err := def.Policies(e.ctx)
			if err != nil || len(want) != 2 || !reflect.DeepEqual(got, want) {
				t.Fatalf("Policies through a = %+v\nthe store's %+v, %v", got, want, err)
			}
		}},
		{"HoldsConcurrentlyInTwoTenants", func(t *testing.T) {
			// Both tenants hold, then release, the same refs from many
			// goroutines at once: each tenant holds each ref once, and
			// exactly one of its releases of a ref finds the hold.
			const workers, refs = 8, 6
			tenants := []store.Retention{ra, rb}
			run := func(fn func(r store.Retention, ti int, ref store.SessionRef) error) {
				t.Helper()
				var wg sync.WaitGroup
				errs := make(chan error, len(tenants)*workers)
				for ti, r := range tenants {
					for range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := range refs {
								if err := fn(r, ti, convRef(fmt.Sprintf("ret-many-%d", i))); err != nil {
									errs <- err
									return
								}
							}
						}()
					}
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			run(func(r store.Retention, _ int, ref store.SessionRef) error { return r.Hold(e.ctx, ref, "many") })
			want := ""
			for i := range refs {
				want += fmt.Sprintf("conversations ret-many-%d (many); ", i)
			}
			for name, r := range map[string]store.Retention{"a": ra, "b": rb} {
				if got := holdsOf(t, r); !strings.Contains(got, want) || strings.Count(got, "ret-many-") != refs {
					t.Fatalf("tenant %s's holds after the concurrent holds = %s", name, got)
				}
			}
			var mu sync.Mutex
			released := make([]int, len(tenants))
			run(func(r store.Retention, ti int, ref store.SessionRef) error {
				ok, err := r.Release(e.ctx, ref)
				if ok {
					mu.Lock()
					released[ti]++
					mu.Unlock()
				}
				return err
			})
			if released[0] != refs || released[1] != refs {
				t.Fatalf("releases that found a hold: %v, want %d in each tenant", released, refs)
			}
			for name, r := range map[string]store.Retention{"a": ra, "b": rb, "default": def} {
				if got := holdsOf(t, r); strings.Contains(got, "ret-many-") {
					t.Fatalf("tenant %s's holds after the releases = %s", name, got)
				}
			}
		}},
		{"OperatorsMethodsAreRefused", func(t *testing.T) {
			invalid(t, "SetPolicy", ra.SetPolicy(e.ctx, store.Policy{Kind: store.PolicyRuntimeIdle, MaxAge: time.Second}))
			_, err := ra.RemovePolicy(e.ctx, store.PolicyConversationsIdle)
			invalid(t, "RemovePolicy", err)
			for _, dry := range []bool{false, true} {
				_, err = ra.Sweep(e.ctx, store.SweepOptions{DryRun: dry})
				invalid(t, fmt.Sprintf("Sweep (dry run %v)", dry), err)
			}
			_, err = ra.Sweeps(e.ctx, 10)
			invalid(t, "Sweeps", err)
			invalid(t, "TakeLease", ra.TakeLease(e.ctx, "tenant-sweeper", time.Hour))
			invalid(t, "DropLease", ra.DropLease(e.ctx, "operator"))
			// Nothing changed: the policies, the operator's lease and
			// the log of sweeps are as they were.
			if got, err := def.Policies(e.ctx); err != nil || len(got) != 2 || got[0].Kind != store.PolicyConversationsIdle {
				t.Fatalf("policies after the refused calls = %+v, %v", got, err)
			}
			if err := def.TakeLease(e.ctx, "other", time.Hour); !errors.Is(err, store.ErrLeaseHeld) {
				t.Fatalf("the operator's lease after the tenant's DropLease: TakeLease by another = %v, want ErrLeaseHeld", err)
			}
			if got, err := def.Sweeps(e.ctx, 0); err != nil || len(got) != len(sweepsBefore) {
				t.Fatalf("the log holds %d sweeps (%v), want %d", len(got), err, len(sweepsBefore))
			}
		}},
	}
	for _, c := range calls {
		t.Run(c.name, c.fn)
	}

	// The store's sweep: idle for two hours, a's read an hour ago.
	if _, err := def.RemovePolicy(e.ctx, store.PolicyMessagesKeepLast); err != nil {
		t.Fatal(err)
	}
	if err := def.DropLease(e.ctx, "operator"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	for _, ref := range []store.SessionRef{agentRef(read), convRef("ret-conv-a")} {
		if err := ra.Accessed(e.ctx, ref); err != nil {
			t.Fatalf("Accessed(%v): %v", ref, err)
		}
	}
	e.clock.Advance(time.Hour)
	counting := []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: 90 * time.Minute, ReadsCount: true},
		{Kind: store.PolicyAgentSessionsIdle, MaxAge: 90 * time.Minute, ReadsCount: true}}
	if _, err := def.Sweep(e.ctx, store.SweepOptions{Policies: counting}); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	for _, c := range []struct {
		who  string
		as   store.AgentSessions
		k    store.SessionKey
		kept bool
	}{
		{"a's held session", ta.AgentSessions(), key, true},
		{"b's session of the key a holds", tb.AgentSessions(), key, false},
		{"the default tenant's session of that key", e.as(), key, false},
		{"a's session read an hour ago", ta.AgentSessions(), read, true},
		{"b's session of the key a read", tb.AgentSessions(), read, false},
	} {
		_, err := c.as.GetSession(e.ctx, store.GetAgentSessionRequest{Key: c.k})
		if kept := err == nil; kept != c.kept || (err != nil && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("after the sweep, %s: GetSession = %v; want kept %v", c.who, err, c.kept)
		}
	}
	for _, c := range []struct {
		who  string
		conv store.Conversations
		id   string
		kept bool
	}{
		// a read it; b's own hold keeps b's; a's hold of b's id is a's.
		{"a's conversation read an hour ago", ta.Conversations(), "ret-conv-a", true},
		{"b's conversation held by b", tb.Conversations(), "ret-conv-b", true},
		{"the default tenant's conversation", e.conv(), "ret-conv-def", false},
	} {
		ok, err := c.conv.Exists(e.ctx, c.id)
		if err != nil || ok != c.kept {
			t.Errorf("after the sweep, %s: Exists = %v, %v; want %v", c.who, ok, err, c.kept)
		}
	}
	// Released, b's conversation goes at the next sweep; a's hold of the
	// same id does not keep it.
	if ok, err := rb.Release(e.ctx, convRef("ret-conv-b")); err != nil || !ok {
		t.Fatalf("Release: %v, %v", ok, err)
	}
	if _, err := def.Sweep(e.ctx, store.SweepOptions{Policies: counting}); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if ok, err := tb.Conversations().Exists(e.ctx, "ret-conv-b"); err != nil || ok {
		t.Fatalf("b's released conversation: Exists = %v, %v; want gone despite a's hold of its id", ok, err)
	}
	if got := holdsOf(t, ra); got != "agent_sessions ret-app/ret-user/held (a again); conversations ret-conv-b (a); " {
		t.Fatalf("a's holds after the sweeps = %s", got)
	}
}
