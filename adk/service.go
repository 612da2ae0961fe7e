package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// ErrStaleSession matches the error of an append through a session handle
// that another writer has overtaken. It is store.ErrStaleSession, which
// also matches store.ErrConflict.
var ErrStaleSession = store.ErrStaleSession

var _ session.Service = (*Service)(nil)

// Service implements ADK's session.Service on a session store. It is safe
// for concurrent use, and several processes may use one database.
type Service struct {
	st      store.Store
	as      store.AgentSessions
	owned   bool
	cache   *readCache          // nil: none
	stamper store.ChangeStamper // nil: the store has none
}

// Open opens (creating if needed) the session store in the SQLite file at
// path and returns an ADK session service on it. Close closes the store.
func Open(ctx context.Context, path string, opts ...sqlstore.Option) (*Service, error) {
	st, err := sqlstore.Open(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	s := New(st)
	s.owned = true
	return s, nil
}

// New returns an ADK session service on st, which may be shared with the
// store's other facets (governed sessions, for example). The caller keeps
// ownership of st: Close does not close it.
//
// The service keeps the sessions and listings it decoded (see Options): a
// Get of a whole session decodes only the events appended since (see
// store.GetAgentSessionRequest.Continue), and repeated reads of what has
// not changed are served without a read while the store's change stamp
// shows no commit (store.ChangeStamper; SQLite stores opened with
// sqlstore.Open have one).
func New(st store.Store) *Service { return NewWithOptions(st, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(st store.Store, opts Options) *Service {
	s := &Service{st: st, as: st.AgentSessions(), cache: newReadCache(opts.ReadCacheEvents)}
	if cs, ok := st.(store.ChangeStamper); ok {
		s.stamper = cs
	}
	return s
}

// Store returns the underlying store, for its other facets.
func (s *Service) Store() store.Store { return s.st }

// Close closes the store if the service opened it (Open); otherwise it does
// nothing.
func (s *Service) Close() error {
	if s.owned {
		return s.st.Close()
	}
	return nil
}

// handle builds a session handle from what the store returned.
func handle(as store.AgentSession) (*Session, error) {
	state, err := decodeState(as.State)
	if err != nil {
		return nil, err
	}
	h := &Session{key: as.Key, version: as.Version, updatedAt: as.UpdatedAt, state: state}
	if len(as.Events) > 0 {
		h.events = make([]*session.Event, len(as.Events))
		if err := decodeEvents(as.Events, h.events); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// parallelDecodeMin is the fewest events decoded by more than one
// goroutine.
const parallelDecodeMin = 128

// readEvents decodes evs[lo:hi] into out[lo:hi] (evs are read with
// EventDataOnly: an error names the event by its position in the read,
// counted from 1, which in a read of the whole log is its seq). The
// events and the structs they point to are allocated together, a few
// allocations for all of them (see decodeSlab).
func readEvents(evs []store.AgentEvent, out []*session.Event, lo, hi int) error {
	decoded := make([]session.Event, hi-lo)
	slab := newDecodeSlab(hi - lo)
	for i := lo; i < hi; i++ {
		ev := &decoded[i-lo]
		if err := decodeEventInto(evs[i].Data, ev, slab, func() string { return "stored event " + strconv.Itoa(i+1) + " of the read" }); err != nil {
			return err
		}
		out[i] = ev
	}
	return nil
}

// decodeEvents decodes evs into out (of the same length), in up to
// GOMAXPROCS chunks at once when there are many: decoding is most of a
// long read's time, and the events are independent. The first error (of
// the earliest event) is returned.
func decodeEvents(evs []store.AgentEvent, out []*session.Event) error {
	workers := min(runtime.GOMAXPROCS(0), len(evs)/(parallelDecodeMin/2))
	if workers <= 1 {
		return readEvents(evs, out, 0, len(evs))
	}
	errs := make([]error, workers)
	chunk := (len(evs) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(evs))
		wg.Go(func() { errs[w] = readEvents(evs, out, lo, hi) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Create creates a session. An empty SessionID is generated (with ADK's
// platform.NewUUID, so a UUID provider on ctx applies). App and user keys
// of State update the shared app and user state; temp: keys are dropped. An
// existing session is an error matching store.ErrConflict.
func (s *Service) Create(ctx context.Context, req *session.CreateRequest) (*session.CreateResponse, error) {
	if req == nil {
		return nil, store.Invalid("request", "must not be nil")
	}
	id := req.SessionID
	if id == "" {
		id = platform.NewUUID(ctx)
	}
	state, err := encodeState("state", req.State)
	if err != nil {
		return nil, err
	}
	created, err := s.as.CreateSession(ctx, store.CreateAgentSessionRequest{
		Key:   store.SessionKey{App: req.AppName, User: req.UserID, Session: id},
		State: state,
	})
	if err != nil {
		return nil, fmt.Errorf("adk: create session: %w", err)
	}
	h, err := handle(created)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: h}, nil
}

// Get returns a session with its merged state and its events, oldest
// first: all of them, or the NumRecentEvents most recent of those at or
// after After when those are set. A missing session (also under another
// user) is an error matching store.ErrNotFound.
func (s *Service) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	if req == nil {
		return nil, store.Invalid("request", "must not be nil")
	}
	h, err := s.get(ctx, store.SessionKey{App: req.AppName, User: req.UserID, Session: req.SessionID},
		max(req.NumRecentEvents, 0), req.After)
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: h}, nil
}

func (s *Service) get(ctx context.Context, key store.SessionKey, recent int, after time.Time) (*Session, error) {
	stamp, stamped := s.stamp(ctx) // before the read (see store.ChangeStamper)
	ck := getKey{key: key, recent: recent}
	if !after.IsZero() {
		ck.after = after.UnixNano()
	}
	whole := recent == 0 && after.IsZero()
	// The events' documents hold their ids, invocations and times: the
	// store's columns of those are not read.
	req := store.GetAgentSessionRequest{Key: key, IncludeEvents: true, Recent: recent, After: after, EventDataOnly: true}
	var prev *cachedSession
	if s.cache != nil {
		if prev = s.cache.get(ck); prev != nil {
			prev = s.cache.settle(ck, prev) // nil: dropped
		}
		if prev != nil {
			if prev.fresh(stamp, stamped) {
				return prev.handle(), nil
			}
			if whole && !prev.log.IsZero() {
				// Only the events after those held are read, if the
				// store can tell that the log only grew since.
				req.Continue = &store.EventPrefix{Log: prev.log, Count: int64(len(prev.events))}
			}
		}
	}
	got, err := s.as.GetSession(ctx, req)
	if err != nil {
		if prev != nil && errors.Is(err, store.ErrNotFound) {
			s.cache.dropGet(ck)
		}
		return nil, fmt.Errorf("adk: get session: %w", err)
	}
	if got.Continued {
		return s.cache.continued(ck, prev, got, stamp, stamped)
	}
	h, err := handle(got)
	if err != nil {
		return nil, err
	}
	if s.cache != nil && (stamped || whole) {
		e := snapshot(stamp, stamped, h)
		if whole && int64(len(e.events)) == got.EventCount {
			e.log = got.Log
		}
		s.cache.replaceGet(ck, prev, e)
	}
	return h, nil
}

// Refresh reloads a handle of this service in place (state, all events,
// version), after an append through it was refused as stale.
func (s *Service) Refresh(ctx context.Context, sess session.Session) error {
	h, ok := sess.(*Session)
	if !ok || h == nil {
		return store.Invalid("session", "not a session of this service")
	}
	h.appendMu.Lock()
	defer h.appendMu.Unlock()
	fresh, err := s.get(ctx, h.key, 0, time.Time{})
	if err != nil {
		return err
	}
	h.replace(fresh)
	return nil
}

// List returns the sessions of an app, or of one user of it, with their
// merged state and without events.
func (s *Service) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	if req == nil {
		return nil, store.Invalid("request", "must not be nil")
	}
	stamp, cached := s.stamp(ctx) // before the read (see store.ChangeStamper)
	cached = cached && s.cache != nil
	lk := listKey{app: req.AppName, user: req.UserID}
	if cached {
		if e := s.cache.list(lk, stamp); e != nil {
			out := make([]session.Session, len(e.sessions))
			for i, cs := range e.sessions {
				out[i] = cs.handle()
			}
			return &session.ListResponse{Sessions: out}, nil
		}
	}
	out := make([]session.Session, 0)
	var keep []*cachedSession
	cursor := ""
	for {
		page, err := s.as.ListSessions(ctx, store.ListAgentSessionsRequest{
			App: req.AppName, User: req.UserID, Cursor: cursor, Limit: store.MaxPageSize,
		})
		if err != nil {
			return nil, fmt.Errorf("adk: list sessions: %w", err)
		}
		for _, item := range page.Items {
			h, err := handle(item)
			if err != nil {
				return nil, err
			}
			out = append(out, h)
			if cached {
				keep = append(keep, snapshot(stamp, true, h))
			}
		}
		if page.Next == "" {
			if cached {
				s.cache.putList(lk, &cachedList{stamp: stamp, sessions: keep})
			}
			return &session.ListResponse{Sessions: out}, nil
		}
		cursor = page.Next
	}
}

// Delete deletes a session with its events and session state; app and
// user state stay. Deleting a missing session (also one of another user)
// succeeds and deletes nothing.
func (s *Service) Delete(ctx context.Context, req *session.DeleteRequest) error {
	if req == nil {
		return store.Invalid("request", "must not be nil")
	}
	key := store.SessionKey{App: req.AppName, User: req.UserID, Session: req.SessionID}
	err := s.as.DeleteSession(ctx, key)
	if s.cache != nil {
		s.cache.dropGet(getKey{key: key}) // frees it early: a later Get would not use it
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("adk: delete session: %w", err)
	}
	return nil
}

// AppendEvent appends a non-partial event to the session and applies its
// state delta, in one transaction; partial events are ignored. An empty
// event ID is generated and a zero Timestamp set to now (both with ADK's
// platform providers). The timestamp is kept exactly, to the nanosecond,
// as ADK's in-memory service keeps it, so that After filters and the
// ranges of compaction events select exactly the events they name.
// temp: keys of the delta are not
// persisted (the stored event omits them) but are visible in the handle.
//
// Through a handle of this service the append is conditional on the
// handle's version: if another writer has appended since the handle was
// read, nothing is written and the error matches ErrStaleSession (see the
// package documentation for refreshing and retrying). On success the
// handle holds the new event, state and version.
func (s *Service) AppendEvent(ctx context.Context, sess session.Session, ev *session.Event) error {
	if sess == nil {
		return store.Invalid("session", "must not be nil")
	}
	if ev == nil {
		return store.Invalid("event", "must not be nil")
	}
	if ev.Partial {
		return nil
	}
	h, _ := sess.(*Session)
	if h != nil {
		h.appendMu.Lock()
		defer h.appendMu.Unlock()
	}
	if ev.ID == "" {
		ev.ID = platform.NewUUID(ctx)
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = platform.Now(ctx)
	}

	stored := withoutTemp(ev)
	data, err := json.Marshal(stored)
	if err != nil {
		return fmt.Errorf("%w: event does not encode as JSON: %w", store.ErrInvalidInput, err)
	}
	delta, err := encodeState("event.actions.stateDelta", stored.Actions.StateDelta)
	if err != nil {
		return err
	}
	var expected int64
	if h != nil {
		expected = h.Version()
	}
	key := store.SessionKey{App: sess.AppName(), User: sess.UserID(), Session: sess.ID()}
	res, err := s.as.AppendEvent(ctx, store.AppendEventRequest{
		Key:             key,
		Event:           store.AgentEvent{ID: ev.ID, InvocationID: ev.InvocationID, Timestamp: ev.Timestamp, Data: data},
		Delta:           delta,
		ExpectedVersion: expected,
	})
	if err != nil {
		return fmt.Errorf("adk: append event: %w", err)
	}
	if h != nil && !res.Replayed {
		h.applied(res.Version, res.UpdatedAt, ev.Actions.StateDelta, stored)
	}
	if s.cache != nil {
		s.cache.appended(key, res, data)
	}
	return nil
}
