// Package adk is a drop-in session.Service for Google's Agent Development
// Kit for Go (google.golang.org/adk/v2) backed by the session store: one
// SQLite file (or any store.Store backend) that several processes can share.
//
//	svc, err := adk.Open(ctx, "sessions.db")
//
// and pass svc as runner.Config.SessionService. It passes ADK's own
// conformance suite (session/sessiontestsuite) and adds what ADK's database
// service lacks:
//
//   - Appends never fail with "database is locked": writes go through the
//     store's single writer with group commit, across goroutines and
//     processes.
//   - Each event is stored as its whole JSON encoding, so every field ADK
//     defines survives, next to indexed columns for the session, the time
//     and the invocation; reading the most recent events uses an index.
//   - The event and its state delta (app:, user: and session keys; temp:
//     keys are never persisted) commit in one transaction.
//   - Deleting a session deletes its events and session state (foreign keys
//     are on for every connection); the schema has versioned migrations.
//
// # Reads
//
// Stored events are decoded by a direct decoder for every shape ADK's
// runner writes (events from session.NewEvent: text, thoughts, function
// calls and responses, usage metadata, state and artifact deltas), which
// hands only rare members (grounding metadata, transcriptions, workflow
// fields, ...) to encoding/json one by one; anything it does not know
// goes to encoding/json whole, with the same result (FuzzFastDecodeEvent).
//
// The service keeps the decoded sessions it reads (see Options for the
// bound). A Get of a whole session it holds asks the store, in one read
// snapshot, for the session's state and version and only the events after
// those held (store.GetAgentSessionRequest.Continue), which the store
// grants only while the log's stamp (store.LogStamp) shows that nothing
// but appends happened since, by any store or process; a rewind, or a
// delete and create under the same id, makes it read the whole log. The
// service's own appends extend the session kept when the store reports
// that the event went right after it, so a runner's Get after its own
// appends decodes no event. A Get or List of what nobody has changed
// since the same call last read it is answered without a read while the
// store's change stamp (store.ChangeStamper: SQLite's data_version) shows
// no commit at all. Handles share the decoded events with each other, as
// ADK's in-memory service shares them between Gets: treat events as
// read-only.
//
// # Memory
//
// Service.Memory (or NewMemory) returns an ADK memory.Service on the same
// store: every event is indexed in the transaction that appends it, and
// SearchMemory reads a user's past across all of the user's sessions in one
// query (store.Searcher), instead of one GetSession per session.
//
// # Stale sessions
//
// A session handle (the session.Session returned by Create or Get) knows the
// version of the session it was read at. AppendEvent through a handle that
// another writer has overtaken (another process, or another handle of the
// same session) is refused with an error matching ErrStaleSession (and
// store.ErrConflict, with details in *store.StaleSessionError): nothing is
// written, and the two writers' histories are never interleaved. Appends
// through one handle, also from several goroutines, are serialized and keep
// the handle current.
//
// To continue after a refusal, reload the session, decide again on the fresh
// history and state, and retry:
//
//	err := svc.AppendEvent(ctx, sess, ev)
//	for errors.Is(err, adk.ErrStaleSession) {
//		if err = svc.Refresh(ctx, sess); err != nil {
//			break
//		}
//		ev = decideAgain(sess, ev) // the history may change the event
//		err = svc.AppendEvent(ctx, sess, ev)
//	}
//
// Refresh reloads the handle in place, so State() and Events() views taken
// from it see the fresh data. An append whose event id is already stored
// with the same content is a replay: it succeeds and writes nothing, which
// makes retrying an append of unknown outcome safe.
package adk
