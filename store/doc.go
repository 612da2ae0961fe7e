// Package store is the domain of the session store: the types an agent
// runtime works with, the interfaces a backend implements, and the errors it
// returns. It contains no SQL. Package sqlstore implements it on SQLite and
// package pgstore on PostgreSQL, both over the same facet code (an internal
// package); package storetest holds the conformance suite and the
// benchmarks every backend runs, and package store/a3s the a3s JSON codec.
//
// # Conversation write verbs
//
// The conversation facet names its writes by one rule: Append adds rows
// after the existing ones (messages, trace events, run events, reports) and
// never changes a stored row; Put inserts or replaces rows by their key
// (PutArtifacts by URI, PutRuns by run id, snapshot and events together);
// Save replaces the whole set (Save of a conversation replaces its data,
// messages and cost records). Every such write runs in one transaction.
//
// # Errors
//
// Every failure matches one of the sentinel errors below with errors.Is.
// Refusals also come as typed errors (BudgetError, ToolError, ...) that carry
// the details for logging; extract them with errors.As. The Error() strings
// are deliberately opaque: they never contain limits, tool names or agent ids,
// so they can be returned to an untrusted agent as they are.
//
// # Time
//
// Backends take an injected clock (func() time.Time) and store times as UTC
// unix milliseconds; every time a backend returns has millisecond precision.
package store
