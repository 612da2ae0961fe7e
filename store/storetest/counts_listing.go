package storetest

import (
	"iter"

	"github.com/agentstore/sessionstore/store"
)

// The counts of store.Counter computed the slow way, from each facet's
// listing API (the way sessionctl stats counted before the store did).

func (e *env) countGovernedByListing(c *store.Counts) {
	now := e.clock.Now()
	g := &c.Governed
	g.ByStatus = map[store.Status]int64{store.StatusActive: 0, store.StatusClosed: 0, store.StatusExpired: 0}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := e.gov().List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range page.Items {
			g.Total++
			g.ByStatus[s.EffectiveStatus(now)]++
		}
		if page.Next == "" {
			return
		}
		f.After = page.Next
	}
}

func (e *env) countRuntimeByListing(c *store.Counts) {
	rt := &c.Runtime
	rt.ByAgent = map[string]int64{}
	req := store.ListIDsRequest{Limit: store.MaxPageSize}
	for {
		page, err := e.rt().ListIDs(e.ctx, req)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, id := range page.Items {
			s := e.rtGet(id)
			rt.Total++
			rt.ByAgent[s.AgentAlias]++
			if s.Turn.Running {
				rt.RunningTurns++
			}
			for u, err := range e.allUploads(id) {
				if err != nil {
					e.t.Fatal(err)
				}
				rt.Uploads++
				rt.UploadBytes += u.SizeBytes
			}
		}
		if page.Next == "" {
			return
		}
		req.After = page.Next
	}
}

// allUploads iterates over the upload entries of runtime session id.
func (e *env) allUploads(id string) iter.Seq2[store.Upload, error] {
	return func(yield func(store.Upload, error) bool) {
		req := store.ListUploadsRequest{SessionID: id, Limit: store.MaxPageSize}
		for {
			page, err := e.rt().ListUploads(e.ctx, req)
			if err != nil {
				yield(store.Upload{}, err)
				return
			}
			for _, u := range page.Items {
				if !yield(u, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			req.After = page.Next
		}
	}
}

func (e *env) countConversationsByListing(c *store.Counts) {
	cv := &c.Conversations
	cv.ByState = map[store.ConversationState]int64{}
	f := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := e.conv().List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range page.Items {
			cv.Total++
			cv.ByState[s.State]++
			cv.Messages += s.MessageCount
			cv.TotalTokens += s.TotalUsage.TotalTokens
			cv.TotalCost += s.TotalCost
		}
		if page.Next == "" {
			return
		}
		f.After = page.Next
	}
}

func (e *env) countAgentSessionsByListing(c *store.Counts) {
	as := &c.AgentSessions
	state := func(key store.SessionKey) store.ScopedState {
		s, err := e.as().GetState(e.ctx, key)
		if err != nil {
			e.t.Fatal(err)
		}
		return s
	}
	for app, err := range store.AllApps(e.ctx, e.as()) {
		if err != nil {
			e.t.Fatal(err)
		}
		as.Apps++
		as.AppStateKeys += int64(len(state(store.SessionKey{App: app}).App))
		for user, err := range store.AllUsers(e.ctx, e.as(), app) {
			if err != nil {
				e.t.Fatal(err)
			}
			as.Users++
			as.UserStateKeys += int64(len(state(store.SessionKey{App: app, User: user}).User))
		}
	}
	for s, err := range store.AllAgentSessions(e.ctx, e.as()) {
		if err != nil {
			e.t.Fatal(err)
		}
		as.Total++
		as.Events += s.EventCount
		as.SessionStateKeys += int64(len(s.State.Session))
	}
}

func (e *env) countAuditByListing(c *store.Counts) {
	heads, err := e.st.Audit().Heads(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range heads {
		c.Audit.Chains++
		c.Audit.EventsAppended += h.Seq
	}
}
