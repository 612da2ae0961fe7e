package pgstore

// Test-only access to internals, for the tests in package pgstore_test.

// UseBatchStats returns how many transactions decided more than one
// governed Use call, and how many calls they decided.
func (s *Store) UseBatchStats() (transactions, calls int64) {
	return s.uses.shared.Load(), s.uses.sharedCalls.Load()
}
