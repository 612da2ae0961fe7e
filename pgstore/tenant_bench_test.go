package pgstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkTenants compares the agent-session hot paths through a tenant
// handle (a set_config at the start of each transaction, single reads in a
// transaction of their own) with the same calls on the default tenant,
// alternating in one loop (see storetest.BenchTenants).
func BenchmarkTenants(b *testing.B) {
	storetest.BenchTenants(b, harness, storetest.BenchOptions{Durability: "on"})
}

// BenchmarkTenantCounts compares a tenant handle's Counts and Totals with
// the store's own on a store of five tenants with 500 of each kind of
// session each (see storetest.BenchTenantCounts).
func BenchmarkTenantCounts(b *testing.B) {
	storetest.BenchTenantCounts(b, harness, storetest.BenchOptions{Durability: "off"}, 500)
}
