package adk

import (
	"context"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
)

// Options configure a Service (see NewWithOptions).
type Options struct {
	// ReadCacheEvents bounds the read cache: how many decoded events the
	// cached results of Get keep in all (0: DefaultReadCacheEvents; < 0:
	// no cache). Lists are cached up to 4 × this many sessions.
	ReadCacheEvents int
}

// DefaultReadCacheEvents is the read cache's default size: about 10,000
// decoded events, some tens of MiB for events of about 1 KiB.
const DefaultReadCacheEvents = 10_000

// readCache keeps the decoded results of recent Get and List calls.
//
// A whole session (a Get without NumRecentEvents or After) is kept with
// the stamp of its event log (store.LogStamp): the next Get of it asks the
// store, in one read snapshot, for the session's state and version and
// only the events after those it holds (GetAgentSessionRequest.Continue),
// which the store grants only while it can tell that nothing but appends
// happened to the log since (a rewind, a delete and create again, by any
// store or process, make it read the whole log). An append through the
// service extends the kept session when the store reports it appended to
// the same log right after the events kept (AppendEventResult.Log and the
// event's position), so that the Get after a runner's own appends reads
// the session row and its state, and no event. Decoding every event again
// is what this saves.
//
// Every result is also kept with the store's change stamp
// (store.ChangeStamper) taken before it was read, and handed out again
// without asking the store while that stamp is unchanged: while nothing
// at all has been committed to the database, by any store or process.
// Windows of events (NumRecentEvents, After) and listings are served only
// this way. A store without change stamps (PostgreSQL, OpenDB) is asked
// every time: for whole sessions, for their new events only.
//
// A result handed out shares its decoded events with the cache and with
// other handles (as ADK's in-memory service shares them between Gets);
// each handle's state map is its own once written (copy on write, see
// Session).
type readCache struct {
	mu        sync.Mutex
	maxEvents int
	events    int // events held by gets (decoded or pending)
	gets      map[getKey]*cachedSession
	lists     map[listKey]*cachedList
	listed    int // sessions held by lists
}

// maxCachedGets bounds the number of cached Get results (sessions read
// without events take no room in the event budget).
const maxCachedGets = 1024

type getKey struct {
	key    store.SessionKey
	recent int
	after  int64 // UnixNano, 0 for none
}

type listKey struct{ app, user string }

// cachedSession is a session as read: everything a handle is built from.
type cachedSession struct {
	// stamp is the change stamp taken before the read, when stamped: the
	// entry may be served without asking the store while it holds.
	stamp   uint64
	stamped bool
	// log is the stamp of the log whose first len(events) events are
	// events (zero for a window of events): the next read of the whole
	// session continues after them.
	log       store.LogStamp
	key       store.SessionKey
	version   int64
	updatedAt time.Time
	state     map[string]any   // never written: handles copy it on write
	events    []*session.Event // len == cap: handles' appends reallocate
	// buf is the array events begins, with room for more; grows is true
	// while this entry may write buf past its events (guarded by
	// readCache.mu): an entry made of events written there takes the
	// right over, so that it is never used twice and extending a kept
	// session by an event copies no other.
	buf   []*session.Event
	grows bool
	// pending are the documents (as stored) of events the service
	// appended after events, not decoded yet: the Get that next uses the
	// entry decodes them (settle), so that a writer that never reads its
	// session back decodes nothing. Only the entry of k may write past
	// its pending documents (appended, under readCache.mu): an entry that
	// is replaced never is again.
	pending [][]byte
}

// size is the number of events e holds, decoded or pending.
func (e *cachedSession) size() int { return len(e.events) + len(e.pending) }

type cachedList struct {
	stamp    uint64
	sessions []*cachedSession
}

func newReadCache(maxEvents int) *readCache {
	if maxEvents == 0 {
		maxEvents = DefaultReadCacheEvents
	}
	if maxEvents < 0 {
		return nil
	}
	return &readCache{maxEvents: maxEvents, gets: map[getKey]*cachedSession{}, lists: map[listKey]*cachedList{}}
}

// stamp returns the store's change stamp, or false when there is none
// (no cache, a store without stamps, or an error: then the read goes to
// the store, which reports any real trouble itself).
func (s *Service) stamp(ctx context.Context) (uint64, bool) {
	if s.cache == nil || s.stamper == nil {
		return 0, false
	}
	v, err := s.stamper.ChangeStamp(ctx)
	return v, err == nil
}

// get returns the entry of k, if any (whether it may be served as it
// is is the caller's to decide).
func (c *readCache) get(k getKey) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[k]
}

// replaceGet keeps e as the entry of k if k's entry is still old (nil:
// none); an entry put meanwhile stays.
func (c *readCache) replaceGet(k getKey, old, e *cachedSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gets[k] == old {
		c.putGetLocked(k, e)
	}
}

// dropGet forgets the entry of k.
func (c *readCache) dropGet(k getKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.gets[k]; old != nil {
		c.events -= old.size()
		delete(c.gets, k)
	}
}

// putGetLocked keeps e as the entry of k; c.mu is held. An entry larger
// than the whole budget is not kept, and k's older entry goes.
func (c *readCache) putGetLocked(k getKey, e *cachedSession) {
	if old := c.gets[k]; old != nil {
		c.events -= old.size()
		delete(c.gets, k)
	}
	if e.size() > c.maxEvents {
		return
	}
	for k2, old := range c.gets { // make room: any entries
		if c.events+e.size() <= c.maxEvents && len(c.gets) < maxCachedGets {
			break
		}
		c.events -= old.size()
		delete(c.gets, k2)
	}
	c.gets[k] = e
	c.events += e.size()
}

func (c *readCache) list(k listKey, stamp uint64) *cachedList {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.lists[k]; e != nil && e.stamp == stamp {
		return e
	}
	return nil
}

func (c *readCache) putList(k listKey, e *cachedList) {
	limit := 4 * c.maxEvents
	if len(e.sessions) > limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.lists[k]; old != nil {
		c.listed -= len(old.sessions)
		delete(c.lists, k)
	}
	for k2, old := range c.lists {
		if c.listed+len(e.sessions) <= limit {
			break
		}
		c.listed -= len(old.sessions)
		delete(c.lists, k2)
	}
	c.lists[k] = e
	c.listed += len(e.sessions)
}

// snapshot records a freshly read handle for the cache, with the change
// stamp taken before the read (when stamped).
func snapshot(stamp uint64, stamped bool, h *Session) *cachedSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stateShared = true // the cache keeps this map: the handle copies it on write
	events := h.events[:len(h.events):len(h.events)]
	return &cachedSession{stamp: stamp, stamped: stamped, key: h.key, version: h.version, updatedAt: h.updatedAt,
		state: h.state, events: events, buf: events, grows: true}
}

// fresh reports whether e may be served without asking the store: the
// change stamp taken now (ok: there is one) is the one e was read under.
func (e *cachedSession) fresh(stamp uint64, ok bool) bool {
	return ok && e.stamped && e.stamp == stamp
}

// grow returns the events of prev, k's entry when it was read, followed
// by tail, and the array they begin: prev's own when prev is still k's
// entry, may grow (it then no longer may: the entry made of the result
// does) and has room; else a new one with room to grow.
func (c *readCache) grow(k getKey, prev *cachedSession, tail []*session.Event) (events, buf []*session.Event) {
	n := len(prev.events)
	m := n + len(tail)
	c.mu.Lock()
	if c.gets[k] == prev && prev.grows && m <= cap(prev.buf) {
		prev.grows = false
		buf = prev.buf[:m]
		copy(buf[n:], tail) // beyond every slice of it handed out
		c.mu.Unlock()
		return buf[:m:m], buf
	}
	c.mu.Unlock()
	buf = make([]*session.Event, m, max(2*m, 16))
	copy(buf, prev.events)
	copy(buf[n:], tail)
	return buf[:m:m], buf
}

// continued builds the handle of a continued read of the whole session
// k (got.Continued) from prev, the entry it continued: prev's events
// followed by the ones read after them, with the state and version read;
// and keeps it, with the change stamp taken before the read (stamped:
// there is one).
func (c *readCache) continued(k getKey, prev *cachedSession, got store.AgentSession, stamp uint64, stamped bool) (*Session, error) {
	state, err := decodeState(got.State)
	if err != nil {
		return nil, err
	}
	tail := make([]*session.Event, len(got.Events))
	if err := decodeEvents(got.Events, tail); err != nil {
		return nil, err
	}
	events, buf := c.grow(k, prev, tail)
	e := &cachedSession{stamp: stamp, stamped: stamped, key: got.Key, version: got.Version, updatedAt: got.UpdatedAt,
		state: state, events: events, buf: buf, grows: true}
	if int64(len(events)) == got.EventCount {
		e.log = got.Log
	}
	c.replaceGet(k, prev, e)
	return e.handle(), nil
}

// appended extends the cached whole session of key with an event the
// service appended (data, as stored), when the store reports that it
// went into the log the entry holds, right after its events (res.Log and
// res.Event.Seq); the first event of a log starts an entry. Otherwise the
// entry is left as it is: the next Get continues from it, or reads the
// whole log. The entry is not served without asking the store (its state
// is not kept: the next Get reads it). The event is kept as its document,
// and decoded by the next Get that uses the entry (settle); data must not
// be written afterwards.
func (c *readCache) appended(key store.SessionKey, res store.AppendEventResult, data []byte) {
	if res.Replayed || res.Log.IsZero() || res.Event.Seq < 1 {
		return
	}
	k := getKey{key: key}
	e := &cachedSession{log: res.Log, key: key, version: res.Version, updatedAt: res.UpdatedAt}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.gets[k]
	switch {
	case prev != nil && prev.log == res.Log && int64(prev.size()) == res.Event.Seq-1:
		// prev's events and pending documents, and data after them. prev
		// is k's entry and is replaced here, under the lock: writing past
		// its pending documents changes nothing any entry holds, and its
		// right to grow its events in place passes to e.
		e.events, e.buf, e.grows = prev.events, prev.buf, prev.grows
		prev.grows = false
		e.pending = append(prev.pending, data)
	case res.Event.Seq == 1: // nothing before it: the first event of a log
		e.pending = [][]byte{data}
	default:
		return
	}
	c.putGetLocked(k, e)
}

// settle returns e, k's entry when it was read, with its pending
// documents decoded (see cachedSession.pending): e itself when none are
// pending, else an entry of e's events followed by the decoded ones,
// which takes e's place if e still holds it. When a document does not
// decode, it returns nil and drops e: the Get then reads the session from
// the store, which reports the trouble.
func (c *readCache) settle(k getKey, e *cachedSession) *cachedSession {
	if len(e.pending) == 0 {
		return e
	}
	docs := make([]store.AgentEvent, len(e.pending))
	for i, d := range e.pending {
		docs[i].Data = d
	}
	tail := make([]*session.Event, len(docs))
	if err := decodeEvents(docs, tail); err != nil {
		c.mu.Lock()
		if c.gets[k] == e {
			c.events -= e.size()
			delete(c.gets, k)
		}
		c.mu.Unlock()
		return nil
	}
	events, buf := c.grow(k, e, tail)
	settled := &cachedSession{stamp: e.stamp, stamped: e.stamped, log: e.log, key: e.key, version: e.version,
		updatedAt: e.updatedAt, state: e.state, events: events, buf: buf, grows: true}
	c.replaceGet(k, e, settled)
	return settled
}

// handle returns a new handle on a cached session.
func (e *cachedSession) handle() *Session {
	return &Session{key: e.key, version: e.version, updatedAt: e.updatedAt,
		state: e.state, stateShared: true, events: e.events}
}
