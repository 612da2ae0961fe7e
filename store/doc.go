// Package store is the domain of the session store: the types an agent
// runtime works with, the interfaces a backend implements, and the errors it
// returns. It contains no SQL; package sqlstore implements it on SQLite and
// package storetest holds the conformance suite every backend must pass.
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
