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
	"github.com/agentstore/sessionstore/humanize"
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
	AgentID string `json:"agent_id"`
	// Chain is the governed session of a session chain, "" (left out)
	// for the agent's own chain, as in documents written before session
	// chains.
	Chain     string `json:"chain,omitempty"`
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
	return AuditEvent{AgentID: e.AgentID, Chain: e.Chain, Seq: e.Seq, At: formatTime(e.At), Kind: string(e.Kind), Outcome: e.Outcome,
		SessionID: e.SessionID, RequestID: e.RequestID, Detail: string(e.Detail), PrevHash: e.PrevHash, Hash: e.Hash}
}

// Event converts the record back to a store.AuditEvent.
func (v AuditEvent) Event() (store.AuditEvent, error) {
	at, err := humanize.ParseTime("at", v.At)
	if err != nil {
		return store.AuditEvent{}, err
	}
	return store.AuditEvent{AgentID: v.AgentID, Chain: v.Chain, Seq: v.Seq, At: at, Kind: store.AuditKind(v.Kind), Outcome: v.Outcome,
		SessionID: v.SessionID, RequestID: v.RequestID, Detail: json.RawMessage(v.Detail), PrevHash: v.PrevHash, Hash: v.Hash}, nil
}

// AuditSection is the audit section of an export document: whole chains
// with their heads. The heads come first, then the events of each chain
// together, in (agent, chain, sequence) order (an agent's own chain before
// its sessions'), so that import reads one chain at a time.
type AuditSection struct {
	Heads  []store.AuditHead `json:"heads"`
	Events []AuditEvent      `json:"events"`
}

// exportAudit writes every chain, or with ids the chains of the agents of
// the governed sessions among them (their own chains, the chains of those
// sessions, and those of their removed sessions), one event at a time.
func exportAudit(ctx context.Context, x *exporter) error {
	heads, err := x.st.Audit().Heads(ctx)
	if err != nil {
		return err
	}
	if x.ids != nil {
		agents, chosen := map[string]bool{}, map[string]bool{}
		for _, id := range x.ids {
			s, err := x.st.Governance().Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			agents[s.AgentID], chosen[id] = true, true
		}
		var keep []store.AuditHead
		for _, h := range heads {
			if !agents[h.AgentID] {
				continue
			}
			if h.Chain != "" && !chosen[h.Chain] {
				// Another session of the agent: its chain goes with it
				// unless the session is gone (its removal is in the
				// agent's chain, exported).
				_, err := x.st.Governance().Get(ctx, h.Chain)
				if err == nil {
					continue
				}
				if !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			keep = append(keep, h)
		}
		heads = keep
	}
	x.out.open("audit", '{')
	defer x.out.close('}')
	x.out.open("heads", '[')
	byChain := map[[2]string]int64{}
	var agents []string
	for _, h := range heads {
		x.out.value("", h)
		x.tick()
		byChain[[2]string{h.AgentID, h.Chain}] = h.Seq
		if len(agents) == 0 || agents[len(agents)-1] != h.AgentID {
			agents = append(agents, h.AgentID)
		}
	}
	x.out.close(']')
	x.out.open("events", '[')
	defer x.out.close(']')
	for _, agent := range agents {
		f := store.AuditFilter{AgentID: agent, Limit: store.MaxPageSize}
		for {
			page, err := x.st.Audit().List(ctx, f)
			if err != nil {
				return err
			}
			for _, e := range page.Items {
				// Events a decision appended after Heads belong to a
				// later head: a chain is exported up to its head, and a
				// chain without an exported head not at all.
				if head, ok := byChain[[2]string{e.AgentID, e.Chain}]; ok && e.Seq <= head {
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
	r := &auditRestore{x: x, heads: map[chainKey]store.AuditHead{}, done: map[chainKey]bool{}}
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
				if h.Chain != "" {
					if err := store.ValidateID("audit.heads.chain", h.Chain); err != nil {
						return fmt.Errorf("audit.heads[%d]: %w", i, err)
					}
				}
				k := chainKey{h.AgentID, h.Chain}
				if _, dup := r.heads[k]; dup {
					return store.Invalid("audit.heads", "two heads of one chain of agent "+h.AgentID)
				}
				r.heads[k] = h
				r.order = append(r.order, k)
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
		slices.SortStableFunc(early, func(a, b store.AuditEvent) int {
			if c := strings.Compare(a.AgentID, b.AgentID); c != 0 {
				return c
			}
			return strings.Compare(a.Chain, b.Chain)
		})
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
	for _, k := range r.order {
		if !r.done[k] {
			if err := r.x.putAudit(r.heads[k], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// chainKey names a chain: its agent, and its session ("" for the
// agent's own chain).
type chainKey struct{ agent, chain string }

// auditRestore collects the events of one chain at a time.
type auditRestore struct {
	x      *importer
	heads  map[chainKey]store.AuditHead
	order  []chainKey
	done   map[chainKey]bool
	cur    chainKey
	events []store.AuditEvent
}

// add takes the next event: one of another chain than the previous one
// restores the previous chain first.
func (r *auditRestore) add(e store.AuditEvent) error {
	k := chainKey{e.AgentID, e.Chain}
	if k != r.cur {
		if err := r.flush(); err != nil {
			return err
		}
		if _, ok := r.heads[k]; !ok {
			return store.Invalid("audit.events", "an event of a chain of agent "+e.AgentID+", which has no head")
		}
		if r.done[k] {
			return store.Invalid("audit.events", "the events of a chain of agent "+e.AgentID+" are not together (as sessionctl export writes them)")
		}
		r.cur = k
	}
	r.events = append(r.events, e)
	return nil
}

// flush restores the chain collected so far.
func (r *auditRestore) flush() error {
	if r.cur.agent == "" {
		return nil
	}
	k, events := r.cur, r.events
	r.cur, r.events = chainKey{}, nil
	r.done[k] = true
	return r.x.putAudit(r.heads[k], events)
}

// putAudit writes one agent's chain (checks it in a dry run).
func (x *importer) putAudit(h store.AuditHead, events []store.AuditEvent) error {
	what := "the audit chain of agent " + h.AgentID
	if h.Chain != "" {
		what = "the audit chain of session " + h.Chain + " of agent " + h.AgentID
	}
	if x.w == nil {
		if err := check.AuditChain(h, events); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return x.put(&x.counts.Audit, what, func(w store.RecordWriter) (bool, error) {
		return w.PutAuditChain(h, events)
	})
}
