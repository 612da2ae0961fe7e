package archive

// The audit trail: whole hash chains with their heads, each checked to
// verify and end at its head when it is restored.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/store"
)

var auditSection = section{
	key:     "audit",
	export:  exportAudit,
	restore: restoreAudit,
}

// AuditEvent is an audit event in an export document: its detail is the
// stored JSON text in a string, so that it comes back byte for byte (the
// hash covers those bytes; an indenting encoder would change them).
type AuditEvent struct {
	AgentID   string `json:"agent_id"`
	Seq       int64  `json:"seq"`
	At        string `json:"at"`
	Kind      string `json:"kind"`
	Outcome   string `json:"outcome"`
	SessionID string `json:"session_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	PrevHash  string `json:"prev_hash"`
	Hash      string `json:"hash"`
	Detail    string `json:"detail"`
}

// NewAuditEvent returns e as an export record.
func NewAuditEvent(e store.AuditEvent) AuditEvent {
	return AuditEvent{AgentID: e.AgentID, Seq: e.Seq, At: formatTime(e.At), Kind: string(e.Kind), Outcome: e.Outcome,
		SessionID: e.SessionID, RequestID: e.RequestID, Detail: string(e.Detail), PrevHash: e.PrevHash, Hash: e.Hash}
}

// Event converts the record back to a store.AuditEvent.
func (v AuditEvent) Event() (store.AuditEvent, error) {
	at, err := parseTime("at", v.At)
	if err != nil {
		return store.AuditEvent{}, err
	}
	return store.AuditEvent{AgentID: v.AgentID, Seq: v.Seq, At: at, Kind: store.AuditKind(v.Kind), Outcome: v.Outcome,
		SessionID: v.SessionID, RequestID: v.RequestID, Detail: json.RawMessage(v.Detail), PrevHash: v.PrevHash, Hash: v.Hash}, nil
}

// AuditSection is the audit section of an export document: whole chains
// with their heads. The heads come first, then the events of each chain
// together, in (agent, sequence) order, so that import reads one chain at
// a time.
type AuditSection struct {
	Heads  []store.AuditHead `json:"heads"`
	Events []AuditEvent      `json:"events"`
}

// exportAudit writes every chain, or with ids the chains of the agents of
// the governed sessions among them, one event at a time.
func exportAudit(ctx context.Context, x *exporter) error {
	heads, err := x.st.Audit().Heads(ctx)
	if err != nil {
		return err
	}
	if x.ids != nil {
		agents := map[string]bool{}
		for _, id := range x.ids {
			s, err := x.st.Governance().Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			agents[s.AgentID] = true
		}
		heads = slices.DeleteFunc(heads, func(h store.AuditHead) bool { return !agents[h.AgentID] })
	}
	x.out.open("audit", '{')
	defer x.out.close('}')
	x.out.open("heads", '[')
	for _, h := range heads {
		x.out.value("", h)
		x.tick()
	}
	x.out.close(']')
	x.out.open("events", '[')
	defer x.out.close(']')
	for _, h := range heads {
		f := store.AuditFilter{AgentID: h.AgentID, Limit: store.MaxPageSize}
		for {
			page, err := x.st.Audit().List(ctx, f)
			if err != nil {
				return err
			}
			for _, e := range page.Items {
				// Events a decision appended after Heads belong to a
				// later head: the chain is exported up to its head.
				if e.Seq <= h.Seq {
					x.out.value("", NewAuditEvent(e))
				}
			}
			if x.out.err != nil {
				return x.out.err
			}
			if page.Next == "" {
				break
			}
			f.After = page.Next
		}
	}
	return nil
}

// restoreAudit reads the audit section (version 3 on) and restores each
// agent's chain whole, one chain at a time: an existing chain is a
// conflict, or with --skip-existing skipped. The events of a chain come
// together after the heads, as export writes them; a rewritten document
// with the events first is read whole.
func restoreAudit(ctx context.Context, x *importer, in *jsonIn, version int) error {
	if version < 3 {
		return store.Invalid("audit", fmt.Sprintf("not part of export version %d", version))
	}
	ok, err := in.delim('{', true)
	if err != nil || !ok {
		return err
	}
	r := &auditRestore{x: x, heads: map[string]store.AuditHead{}, done: map[string]bool{}}
	var early []store.AuditEvent // events read before the heads
	seenHeads, seenEvents := false, false
	for {
		k, more, err := in.key()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch k {
		case "heads":
			if seenHeads {
				return store.Invalid("audit", "heads appear twice")
			}
			seenHeads = true
			if err := in.array(func(i int) error {
				var h store.AuditHead
				if err := in.decode(&h); err != nil {
					return err
				}
				if err := store.ValidateID("audit.heads.agent_id", h.AgentID); err != nil {
					return fmt.Errorf("audit.heads[%d]: %w", i, err)
				}
				if _, dup := r.heads[h.AgentID]; dup {
					return store.Invalid("audit.heads", "two heads of agent "+h.AgentID)
				}
				r.heads[h.AgentID] = h
				r.order = append(r.order, h.AgentID)
				return nil
			}); err != nil {
				return err
			}
		case "events":
			if seenEvents {
				return store.Invalid("audit", "events appear twice")
			}
			seenEvents = true
			if err := in.array(func(i int) error {
				var v AuditEvent
				if err := in.decode(&v); err != nil {
					return err
				}
				e, err := v.Event()
				if err != nil {
					return fmt.Errorf("audit.events[%d]: %w", i, asInvalid(err))
				}
				if !seenHeads {
					early = append(early, e)
					return nil
				}
				return r.add(e)
			}); err != nil {
				return err
			}
		default:
			return store.Invalid("audit", fmt.Sprintf("unknown field %q", k))
		}
	}
	if len(early) > 0 {
		slices.SortStableFunc(early, func(a, b store.AuditEvent) int { return strings.Compare(a.AgentID, b.AgentID) })
		for _, e := range early {
			if err := r.add(e); err != nil {
				return err
			}
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	// A head without events: the chain is refused as incomplete.
	for _, agent := range r.order {
		if !r.done[agent] {
			if err := r.x.putAudit(r.heads[agent], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// auditRestore collects the events of one chain at a time.
type auditRestore struct {
	x      *importer
	heads  map[string]store.AuditHead
	order  []string
	done   map[string]bool
	agent  string
	events []store.AuditEvent
}

// add takes the next event: one of another agent than the previous one
// restores the previous agent's chain first.
func (r *auditRestore) add(e store.AuditEvent) error {
	if e.AgentID != r.agent {
		if err := r.flush(); err != nil {
			return err
		}
		if _, ok := r.heads[e.AgentID]; !ok {
			return store.Invalid("audit.events", "an event of agent "+e.AgentID+", which has no head")
		}
		if r.done[e.AgentID] {
			return store.Invalid("audit.events", "the events of agent "+e.AgentID+" are not together (as sessionctl export writes them)")
		}
		r.agent = e.AgentID
	}
	r.events = append(r.events, e)
	return nil
}

// flush restores the chain collected so far.
func (r *auditRestore) flush() error {
	if r.agent == "" {
		return nil
	}
	agent, events := r.agent, r.events
	r.agent, r.events = "", nil
	r.done[agent] = true
	return r.x.putAudit(r.heads[agent], events)
}

// putAudit writes one agent's chain (checks it in a dry run).
func (x *importer) putAudit(h store.AuditHead, events []store.AuditEvent) error {
	what := "the audit chain of agent " + h.AgentID
	if x.w == nil {
		if err := check.AuditChain(h, events); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return x.put(&x.counts.Audit, what, func(w store.RecordWriter) (bool, error) {
		return w.PutAuditChain(h, events)
	})
}
