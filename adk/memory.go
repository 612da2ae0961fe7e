package adk

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
)

var _ memory.Service = (*Memory)(nil)

// Memory implements ADK's memory.Service on the store's search index
// (store.Searcher). The store indexes every event in the transaction that
// appends it, so there is nothing to copy: AddSessionToMemory only checks
// that the session is the store's, and SearchMemory is one query over all
// of the user's sessions — never a GetSession per session.
//
// SearchMemory finds the user's events whose text (content parts' text,
// function call names and arguments) contains every word of the query,
// best first; an empty query returns the user's most recent events
// (store.Searcher.History). Entries carry the event's content, author and
// timestamp, and in CustomMetadata the session id ("session_id") and the
// event's position ("seq").
type Memory struct {
	st    store.Store
	s     store.Searcher
	limit int
}

// DefaultMemoryLimit is the number of entries a search returns when
// NewMemory is given 0.
const DefaultMemoryLimit = 20

// NewMemory returns a memory service on st, returning at most limit
// entries per search (0: DefaultMemoryLimit, at most
// store.MaxSearchLimit). st must implement store.Searcher (both backends
// do).
func NewMemory(st store.Store, limit int) (*Memory, error) {
	s, ok := st.(store.Searcher)
	if !ok {
		return nil, fmt.Errorf("%w: the store %T has no search index", store.ErrInvalidInput, st)
	}
	if limit < 0 || limit > store.MaxSearchLimit {
		return nil, store.Invalid("limit", "out of range")
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	return &Memory{st: st, s: s, limit: limit}, nil
}

// Memory returns a memory service on the service's store (see NewMemory).
func (s *Service) Memory(limit int) (*Memory, error) { return NewMemory(s.st, limit) }

// AddSessionToMemory checks that sess is stored: its events were indexed
// when they were appended. A session the store does not hold is
// store.ErrNotFound (add it through the session service first).
func (m *Memory) AddSessionToMemory(ctx context.Context, sess session.Session) error {
	if sess == nil {
		return store.Invalid("session", "nil")
	}
	key := store.SessionKey{App: sess.AppName(), User: sess.UserID(), Session: sess.ID()}
	if err := key.Validate(); err != nil {
		return err
	}
	_, err := m.st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key})
	return err
}

// SearchMemory returns the user's events that match req.Query, in one
// query across all of the user's sessions of req.AppName.
func (m *Memory) SearchMemory(ctx context.Context, req *memory.SearchRequest) (*memory.SearchResponse, error) {
	if req == nil {
		return nil, store.Invalid("request", "nil")
	}
	resp := &memory.SearchResponse{Memories: []memory.Entry{}}
	if strings.TrimSpace(req.Query) == "" {
		page, err := m.s.History(ctx, store.HistoryRequest{App: req.AppName, User: req.UserID, Limit: m.limit})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			e, err := memoryEntry(it.Key.Session, it.Event)
			if err != nil {
				return nil, err
			}
			resp.Memories = append(resp.Memories, e)
		}
		return resp, nil
	}
	if err := store.ValidateID("app", req.AppName); err != nil {
		return nil, err
	}
	if err := store.ValidateID("user", req.UserID); err != nil {
		return nil, err
	}
	res, err := m.s.Search(ctx, store.SearchQuery{Query: req.Query, App: req.AppName, User: req.UserID,
		Kinds: []store.SearchKind{store.SearchEvent}, Limit: m.limit, IncludeEvents: true})
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		if h.Event == nil {
			continue // removed between the index and the read: cannot happen in one snapshot
		}
		e, err := memoryEntry(h.SessionID, *h.Event)
		if err != nil {
			return nil, err
		}
		resp.Memories = append(resp.Memories, e)
	}
	return resp, nil
}

// memoryEntry makes a memory entry of a stored event.
func memoryEntry(sessionID string, ev store.AgentEvent) (memory.Entry, error) {
	dec, err := decodeEvent(ev.Data, func() string { return "stored event " + strconv.FormatInt(ev.Seq, 10) })
	if err != nil {
		return memory.Entry{}, err
	}
	return memory.Entry{
		ID:             sessionID + "/" + strconv.FormatInt(ev.Seq, 10),
		Content:        dec.Content,
		Author:         dec.Author,
		Timestamp:      ev.Timestamp,
		CustomMetadata: map[string]any{"session_id": sessionID, "seq": ev.Seq},
	}, nil
}
