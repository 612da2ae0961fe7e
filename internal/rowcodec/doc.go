// Package rowcodec holds the stored forms of domain values: how the SQL
// backends (internal/sqlcore, sqlstore, pgstore) turn store types into
// column values and back. None of it is part of the library's API; the
// domain package store keeps what callers need (types, validation, errors)
// and nothing about how a backend lays out its rows.
//
// The forms are what databases hold: change one only together with a
// migration.
//
// Some forms are produced by store's validation, which returns them so
// that a value is encoded once on the write path: the content of messages
// (store.ValidateMessage, used by NormalizeConversation and
// AppendRequest.Validate) and the body of a run snapshot and its events
// (store.NormalizeRun). This package reads them back (DecodeContent,
// DecodeRunSnapshot).
package rowcodec
