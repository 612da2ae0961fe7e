package sqlstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkTenants compares the agent-session hot paths through a tenant
// handle with the same calls on the default tenant, alternating in one
// loop (see storetest.BenchTenants).
func BenchmarkTenants(b *testing.B) {
	storetest.BenchTenants(b, harness, storetest.BenchOptions{Durability: string(sqlstore.SyncFull)})
}

// BenchmarkTenantsSyncNormal is BenchmarkTenants without an fsync per
// commit, where the tenant's extra CPU work (the triggers that copy the
// session's tenant into its child rows) is not hidden by the disk.
func BenchmarkTenantsSyncNormal(b *testing.B) {
	storetest.BenchTenants(b, harness, storetest.BenchOptions{Durability: string(sqlstore.SyncNormal)})
}

// BenchmarkTenantCounts compares a tenant handle's Counts and Totals with
// the store's own on a store of five tenants with 500 of each kind of
// session each (see storetest.BenchTenantCounts).
func BenchmarkTenantCounts(b *testing.B) {
	storetest.BenchTenantCounts(b, harness, storetest.BenchOptions{Durability: string(sqlstore.SyncOff)}, 500)
}
