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

// readCache keeps the decoded results of recent Get and List calls, each
// with the store's change stamp (store.ChangeStamper) taken before it was
// read, and hands a result out again only while the stamp is unchanged:
// while nothing at all has been committed to the database, by any store
// or process. Any commit makes every entry stale (they are read afresh);
// the point is the repeated read of an unchanged session or listing, which
// otherwise decodes every event again. A store without change stamps
// (PostgreSQL, OpenDB) is read every time.
//
// A result handed out shares its decoded events with the cache and with
// other handles (as ADK's in-memory service shares them between Gets);
// each handle's state map is its own once written (copy on write, see
// Session).
type readCache struct {
	mu        sync.Mutex
	maxEvents int
	events    int // decoded events held by gets
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
	stamp     uint64
	key       store.SessionKey
	version   int64
	updatedAt time.Time
	state     map[string]any   // never written: handles copy it on write
	events    []*session.Event // len == cap: handles' appends reallocate
}

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

func (c *readCache) get(k getKey, stamp uint64) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.gets[k]; e != nil && e.stamp == stamp {
		return e
	}
	return nil
}

func (c *readCache) putGet(k getKey, e *cachedSession) {
	if len(e.events) > c.maxEvents {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.gets[k]; old != nil {
		c.events -= len(old.events)
		delete(c.gets, k)
	}
	for k2, old := range c.gets { // make room: any entries
		if c.events+len(e.events) <= c.maxEvents && len(c.gets) < maxCachedGets {
			break
		}
		c.events -= len(old.events)
		delete(c.gets, k2)
	}
	c.gets[k] = e
	c.events += len(e.events)
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

// snapshot records a freshly read handle for the cache.
func snapshot(stamp uint64, h *Session) *cachedSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stateShared = true // the cache keeps this map: the handle copies it on write
	return &cachedSession{stamp: stamp, key: h.key, version: h.version, updatedAt: h.updatedAt,
		state: h.state, events: h.events[:len(h.events):len(h.events)]}
}

// handle returns a new handle on a cached session.
func (e *cachedSession) handle() *Session {
	return &Session{key: e.key, version: e.version, updatedAt: e.updatedAt,
		state: e.state, stateShared: true, events: e.events}
}
