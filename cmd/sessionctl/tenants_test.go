package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTenantsListsTenantsWithCounts: tenants lists the tenants that own
// rows, with their counts, in text and JSON; a read under a tenant that
// owns no row is said to be unknown (exit 3, with the near name), while
// create may start a new tenant.
func TestTenantsListsTenantsWithCounts(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	if code, out, _ := sctl(t, "--db", db, "create", "--agent", "a", "--tool", "x", "--budget", "3"); code != 0 {
		t.Fatal(out)
	}
	if code, out, _ := sctl(t, "--db", db, "tenants"); code != 0 || !strings.Contains(out, "no tenants") {
		t.Fatalf("tenants of a store without tenants: %d %q", code, out)
	}
	for _, tn := range []string{"acme", "acme", "beta"} {
		if code, _, errs := sctl(t, "--db", db, "--tenant", tn, "create", "--agent", "a", "--tool", "x", "--budget", "3"); code != 0 {
			t.Fatalf("create under %s: %d %s", tn, code, errs)
		}
	}
	code, out, errs := sctl(t, "--db", db, "tenants", "--json")
	var doc struct {
		Items []tenantRow `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("tenants --json: %d %s %s", code, out, errs)
	}
	want := []tenantRow{{Tenant: "acme", GovernedSessions: 2, AuditChains: 1}, {Tenant: "beta", GovernedSessions: 1, AuditChains: 1}}
	if len(doc.Items) != len(want) {
		t.Fatalf("tenants: %+v, want %+v", doc.Items, want)
	}
	for i := range want {
		if doc.Items[i] != want[i] {
			t.Errorf("tenant %d: %+v, want %+v", i, doc.Items[i], want[i])
		}
	}
	code, out, _ = sctl(t, "--db", db, "tenants")
	if code != 0 || !strings.Contains(out, "TENANT") || !strings.Contains(out, "acme") || !strings.Contains(out, "beta") {
		t.Fatalf("tenants: %d %s", code, out)
	}
	code, out, errs = sctl(t, "--db", db, "--tenant", "acmee", "list")
	if code != exitNotFound || out != "" || !strings.Contains(errs, "tenant acmee is unknown") || !strings.Contains(errs, "acme") {
		t.Fatalf("list under an unknown tenant: %d %q %q", code, out, errs)
	}
	if code, _, errs := sctl(t, "--db", db, "--tenant", "gamma", "create", "--agent", "a", "--tool", "x", "--budget", "1"); code != 0 {
		t.Fatalf("create under a new tenant: %d %s", code, errs)
	}
	if code, _, errs := sctl(t, "--db", db, "--tenant", "gamma", "list"); code != 0 {
		t.Fatalf("list under the new tenant: %d %s", code, errs)
	}
}
