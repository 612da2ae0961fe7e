package pgstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkConversationEncryption compares message appends and a read of
// 1,000 messages of an encrypted conversation with a plain one, in one
// loop (see storetest.BenchConversationEncryption).
//
//	scripts/with-postgres.sh go test -run '^$' -bench BenchmarkConversationEncryption -benchtime 300x ./pgstore
func BenchmarkConversationEncryption(b *testing.B) {
	storetest.BenchConversationEncryption(b, harness, storetest.BenchOptions{Durability: "on"})
}

// BenchmarkAgentEncryption compares event appends and a get of 1,000
// events of an encrypted agent session with a plain one, in one loop (see
// storetest.BenchAgentEncryption; sqlstore's BenchmarkEncryption is the
// same on SQLite).
//
//	scripts/with-postgres.sh go test -run '^$' -bench BenchmarkAgentEncryption -benchtime 300x ./pgstore
func BenchmarkAgentEncryption(b *testing.B) {
	storetest.BenchAgentEncryption(b, harness, storetest.BenchOptions{Durability: "on"})
}
