// Package store is the domain of the session store: the types an agent
// runtime works with, the interfaces a backend implements, and the errors it
// returns. It contains no SQL, and nothing about how a backend lays out its
// rows. Package sqlstore implements it on SQLite and package pgstore on
// PostgreSQL; both run the same code for the conversation, runtime,
// agent-session and spend facets and the audit trail (an internal package)
// and each its own for governance. Package storetest holds the conformance suite and the
// benchmarks every backend runs, and package store/a3s the a3s JSON codec.
//
// # Conversation write verbs
//
// The conversation facet names its writes by one rule: Append adds rows
// after the existing ones (messages, trace events, run events, reports) and
// never changes a stored row; Put inserts or replaces rows by their key
// (PutArtifacts by URI, PutRuns by run id, snapshot and events together);
// Save replaces the whole set (Save of a conversation replaces its data,
// messages and cost records; SaveTraces and SaveReports replace all of a
// conversation's trace events or reports). Every such write runs in one
// transaction.
//
// # Errors
//
// Every failure matches one of the sentinel errors below with errors.Is.
// Refusals also come as typed errors (BudgetError, ToolError, ...) that carry
// the details for logging; extract them with errors.As. The Error() strings
// are deliberately opaque: they never contain limits, tool names or agent ids,
// so they can be returned to an untrusted agent as they are.
//
// # Spend and audit
//
// Spend limits bound what governed sessions and agents consume in tokens
// and money (integer micro-units of a named currency, never a float):
// Spend.Reserve counts an upper bound against every limit that applies,
// Settle records the actual usage, Release gives it back, and a
// reservation that lapses is released (see Spend). Every governance
// decision appends an event to its agent's hash chain in the decision's
// own transaction (see Audit).
//
// # Time
//
// Backends take an injected Clock, so that expiry and rate windows are
// testable without sleeping, and keep times with millisecond precision on
// every backend: a time a backend returns is in UTC and truncated to a whole
// millisecond (times given on write are truncated, not rejected). Time
// limits and rate windows must be whole milliseconds (DurationPrecision):
// a finer one is refused with ErrInvalidInput whose InvalidInputError
// names the smallest value kept (Smallest, 1ms), never rounded. A time
// limit under one second is raised to MinTimeLimit; a negative one is
// refused. Restoring sessions (RestoreRequest) requires their times in
// whole milliseconds.
//
// # Names
//
// Agent ids (also in a delegation chain) and request ids are names (see
// ValidateName): any valid UTF-8 of 1 to MaxIDLength bytes without control
// characters and without white space at either end. Tool and credential
// names are 1 to MaxToolNameLength bytes of [A-Za-z0-9_-.:/@+] (see
// ValidateToolName). The store compares them exactly and never trims
// them: a value with a stray space or control character is refused, at
// create and at use, so that it is never counted as another one.
package store
