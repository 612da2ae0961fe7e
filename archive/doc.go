// Package archive is the store's portable export format: one JSON document
// that holds every facet of the registry (package facet) — governed
// sessions with their spend limits and reservations, runtime sessions with
// their uploads, conversations with all their records, agent sessions with
// their event logs and shared state, and the audit chains — and the
// import that puts it back exactly as it was stored, on either backend.
//
// Export reads the whole document from one read snapshot
// (store.Snapshotter), so that a file taken while the store is in use is
// the state of one instant and always imports: a session created during
// the export is wholly in it or wholly out of it. It writes one item at a
// time, so its memory does not grow with the database, only with the
// largest single item (one conversation with its messages, one agent
// session with its events, one upload).
//
// Import reads a file one item at a time inside one write transaction of
// the destination (store.RecordRestorer): the file is imported completely
// or not at all. It reads every version of the format up to Version and
// refuses newer ones with a clear error. It also takes the session files
// of the a3s-code file store (package store/a3s), as conversations.
//
// sessionctl's export and import commands and the console's export
// download are thin shells over this package; a Go program that links the
// store can do everything they do, for example move a store from SQLite
// to PostgreSQL:
//
//	counts, err := archive.Export(ctx, src, w, archive.ExportOptions{})
//	...
//	res, err := archive.Import(ctx, dst, r, archive.ImportOptions{})
package archive
