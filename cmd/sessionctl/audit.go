package main

// The audit trail on the command line: "sessionctl audit" lists and
// filters it, "audit verify" checks every chain, "audit checkpoint" and
// "audit prune" are its retention; and the audit facet's maintenance
// (export, import, stats; gc leaves it to audit prune).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var auditSpec = spec{
	name: "audit",
	args: "[list | verify | checkpoint | prune]",
	about: `The audit trail: every governance decision (a create, each use or
reservation allowed or refused, a settle, a release, a close, an expiry, a
lapse, a cleanup, a change of limits), appended in the decision's own
transaction to its agent's hash chain.

  audit [list]      lists events in (agent, sequence) order, filtered by
                    --agent, --session, --kind, --outcome, --since, --until;
                    --limit per page, --after the cursor printed after it
                    (--all reads every page)
  audit verify      checks every chain: each event's hash covers its fields
                    and its predecessor's hash, and the chain ends at its
                    recorded head. Names the first event of each chain that
                    was changed, removed or inserted, and prints one digest
                    over every chain head: record it elsewhere to tell later
                    that a whole chain was not removed or rewritten. Exits 1
                    when a chain does not verify.
  audit checkpoint  appends a checkpoint to every chain (or --agent's): the
                    points where prune may cut
  audit prune       removes the events before each chain's newest
                    checkpoint made before --before (or --older-than ago;
                    --older-than 0s: the newest checkpoint made so far),
                    after checking that they verify; a chain that does not
                    verify is not cut (exit 1)`,
	examples: []string{
		"sessionctl audit --agent agent-42 --since 2026-01-02T00:00:00Z",
		"sessionctl audit --outcome spend_limit_exceeded --json",
		"sessionctl audit verify",
		"sessionctl audit checkpoint && sessionctl audit prune --older-than 2160h",
	},
}

func runAudit(ctx context.Context, g *globals, args []string) error {
	sub := "list"
	if len(args) > 0 && slices.Contains([]string{"list", "verify", "checkpoint", "prune"}, args[0]) {
		sub, args = args[0], args[1:]
	}
	sp := auditSpec
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "only the chain of agent `ID`")
	session := fs.String("session", "", "list: only the events of session `ID`")
	kind := fs.String("kind", "", "list: only events of `KIND` (create, use, reserve, settle, release, close, expire, lapse, cleanup, limits, checkpoint)")
	outcome := fs.String("outcome", "", "list: only events with `OUTCOME` (ok, or a refusal such as budget_exceeded)")
	since := fs.String("since", "", "list: only events at or after `TIME` (RFC 3339)")
	until := fs.String("until", "", "list: only events before `TIME` (RFC 3339)")
	limit := fs.Int("limit", 100, "list: events per page, `N`")
	after := fs.String("after", "", "list: continue after `CURSOR` (printed after a page)")
	all := fs.Bool("all", false, "list: every page")
	before := fs.String("before", "", "prune: cut at the newest checkpoint before `TIME` (RFC 3339)")
	olderThan := fs.Duration("older-than", 0, "prune: cut at the newest checkpoint older than `DURATION` (0s: the newest one)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	name := sp.name + " " + sub
	switch sub {
	case "list":
		f := store.AuditFilter{AgentID: *agent, SessionID: *session, Kind: store.AuditKind(*kind), Outcome: *outcome,
			After: *after, Limit: *limit}
		var err error
		if f.Since, err = optTime("since", *since); err != nil {
			return g.usageErr(name, "%v", err)
		}
		if f.Until, err = optTime("until", *until); err != nil {
			return g.usageErr(name, "%v", err)
		}
		if _, err := f.Normalize(); err != nil {
			return g.usageErr(name, "%v", err)
		}
		return g.auditList(ctx, name, f, *all, *asJSON)
	case "verify":
		return g.auditVerify(ctx, name, *asJSON)
	case "checkpoint":
		if *agent != "" {
			if err := store.ValidateID("agent", *agent); err != nil {
				return g.usageErr(name, "%v", err)
			}
		}
		st, err := g.openExisting(ctx)
		if err != nil {
			return g.fail(name, err)
		}
		defer st.Close()
		n, err := st.Audit().Checkpoint(ctx, *agent)
		if err != nil {
			return g.fail(name, err)
		}
		if *asJSON {
			return g.jsonOr(name, map[string]int64{"checkpointed_chains": n})
		}
		fmt.Fprintf(g.stdout, "checkpointed %d %s\n", n, plural(int(n), "chain", "chains"))
		return nil
	case "prune":
		cut, err := optTime("before", *before)
		if err != nil {
			return g.usageErr(name, "%v", err)
		}
		// --older-than 0s is "every checkpoint made so far": what
		// checkpoint then prune --older-than 0s is expected to do.
		olderSet := false
		fs.Visit(func(f *flag.Flag) { olderSet = olderSet || f.Name == "older-than" })
		switch {
		case *olderThan < 0:
			return g.usageErr(name, "--older-than must not be negative")
		case olderSet == !cut.IsZero():
			return g.usageErr(name, "give one of --before and --older-than")
		case olderSet:
			cut = g.clock().Add(-*olderThan)
		}
		st, err := g.openExisting(ctx)
		if err != nil {
			return g.fail(name, err)
		}
		defer st.Close()
		n, err := st.Audit().Prune(ctx, store.AuditPruneRequest{Before: cut, AgentID: *agent})
		if err != nil {
			return g.fail(name, err)
		}
		if *asJSON {
			return g.jsonOr(name, map[string]any{"before": jsonTime(cut), "removed_events": n})
		}
		fmt.Fprintf(g.stdout, "removed %d %s before the checkpoints made before %s\n", n, plural(int(n), "event", "events"), tableTime(cut))
		return nil
	}
	return exitStatus(exitUsage)
}

// jsonOr writes v as JSON (a failure is reported under name).
func (g *globals) jsonOr(name string, v any) error {
	if err := writeJSON(g.stdout, v); err != nil {
		return g.fail(name, err)
	}
	return nil
}

// optTime parses an optional RFC 3339 flag value (zero when empty).
func optTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, store.Invalid(field, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return t, nil
}

// auditEventView is the JSON shape of an audit event.
type auditEventView struct {
	AgentID   string          `json:"agent_id"`
	Seq       int64           `json:"seq"`
	At        string          `json:"at"`
	Kind      string          `json:"kind"`
	Outcome   string          `json:"outcome"`
	SessionID string          `json:"session_id,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	Detail    json.RawMessage `json:"detail"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

func newAuditEventView(e store.AuditEvent) auditEventView {
	return auditEventView{AgentID: e.AgentID, Seq: e.Seq, At: jsonTime(e.At), Kind: string(e.Kind), Outcome: e.Outcome,
		SessionID: e.SessionID, RequestID: e.RequestID, Detail: e.Detail, PrevHash: e.PrevHash, Hash: e.Hash}
}

// auditExportEvent is an audit event in an export file: its detail is the
// stored JSON text in a string, so that it comes back byte for byte (the
// hash covers those bytes; an indenting encoder would change them).
type auditExportEvent struct {
	auditEventView
	Detail string `json:"detail"`
}

func newAuditExportEvent(e store.AuditEvent) auditExportEvent {
	return auditExportEvent{auditEventView: newAuditEventView(e), Detail: string(e.Detail)}
}

func (v auditExportEvent) event() (store.AuditEvent, error) {
	at, err := parseJSONTime("at", v.At)
	if err != nil {
		return store.AuditEvent{}, err
	}
	return store.AuditEvent{AgentID: v.AgentID, Seq: v.Seq, At: at, Kind: store.AuditKind(v.Kind), Outcome: v.Outcome,
		SessionID: v.SessionID, RequestID: v.RequestID, Detail: json.RawMessage(v.Detail), PrevHash: v.PrevHash, Hash: v.Hash}, nil
}

func (g *globals) auditList(ctx context.Context, name string, f store.AuditFilter, all, asJSON bool) error {
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(name, err)
	}
	defer st.Close()
	var events []store.AuditEvent
	next := ""
	for {
		page, err := st.Audit().List(ctx, f)
		if err != nil {
			return g.fail(name, err)
		}
		events = append(events, page.Items...)
		next = page.Next
		if !all || next == "" {
			break
		}
		f.After = next
	}
	if asJSON {
		doc := struct {
			Events []auditEventView `json:"events"`
			Next   string           `json:"next,omitempty"`
		}{Events: []auditEventView{}, Next: next}
		for _, e := range events {
			doc.Events = append(doc.Events, newAuditEventView(e))
		}
		return g.jsonOr(name, doc)
	}
	tw := newTable(g.stdout)
	fmt.Fprintln(tw, "AGENT\tSEQ\tAT\tKIND\tOUTCOME\tSESSION\tREQUEST\tDETAIL")
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(e.AgentID), e.Seq, tableTime(e.At), e.Kind, cell(e.Outcome),
			orDash(cell(e.SessionID)), orDash(cell(e.RequestID)), cell(clip(string(e.Detail), 60)))
	}
	if err := tw.Flush(); err != nil {
		return g.fail(name, err)
	}
	if next != "" {
		fmt.Fprintf(g.stdout, "more: --after %s\n", next)
	}
	return nil
}

func (g *globals) auditVerify(ctx context.Context, name string, asJSON bool) error {
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(name, err)
	}
	defer st.Close()
	rep, err := st.Audit().Verify(ctx)
	if err != nil {
		return g.fail(name, err)
	}
	var code error // a chain that does not verify: exit 1, the report said why
	if !rep.OK() {
		code = exitStatus(exitError)
	}
	if asJSON {
		if err := writeJSON(g.stdout, struct {
			OK bool `json:"ok"`
			store.AuditReport
		}{rep.OK(), rep}); err != nil {
			return g.fail(name, err)
		}
		return code
	}
	writeAuditReport(g.stdout, rep)
	return code
}

// writeAuditReport prints what verify found.
func writeAuditReport(w io.Writer, rep store.AuditReport) {
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "agent %s: event %d %s: %s\n", cell(p.AgentID), p.Seq, p.Problem, cell(p.Reason))
	}
	verdict := "verified"
	if !rep.OK() {
		verdict = fmt.Sprintf("checked, %d did not verify", len(rep.Problems))
	}
	fmt.Fprintf(w, "%d %s with %d %s %s\ndigest %s\n", rep.Chains, plural(int(rep.Chains), "chain", "chains"),
		rep.Events, plural(int(rep.Events), "event", "events"), verdict, rep.Digest)
}

// auditCheck is doctor's check of the audit trail.
func auditCheck(ctx context.Context, st cliStore, add func(name, status, format string, args ...any)) bool {
	rep, err := st.Audit().Verify(ctx)
	switch {
	case err != nil:
		add("audit", checkFail, "cannot verify the audit trail: %v", err)
		return false
	case !rep.OK():
		p := rep.Problems[0]
		add("audit", checkFail, "%d of %d audit chains do not verify; first: agent %s, event %d %s (%s)",
			len(rep.Problems), rep.Chains, cell(p.AgentID), p.Seq, p.Problem, cell(p.Reason))
		return false
	}
	add("audit", checkOK, "%d %s with %d %s verified, digest %s", rep.Chains, plural(int(rep.Chains), "chain", "chains"),
		rep.Events, plural(int(rep.Events), "event", "events"), rep.Digest)
	return true
}

// Maintenance of the audit facet.
var auditOps = facetOps{
	one: "audit chain", many: "audit chains",
	count:     func(c *facetCounts) *int64 { return &c.Audit },
	section:   "audit",
	export:    exportAudit,
	restore:   restoreAudit,
	stats:     statsAudit,
	statsRows: statsAuditRows,
	gcNone:    "audit chains: cut only at checkpoints, by sessionctl audit checkpoint and audit prune",
}

// auditExport is the audit section of an export document: whole chains
// with their heads. The heads come first, then the events of each chain
// together, in (agent, sequence) order, so that import reads one chain at
// a time.
type auditExport struct {
	Heads  []store.AuditHead  `json:"heads"`
	Events []auditExportEvent `json:"events"`
}

// exportAudit writes every chain, or with ids the chains of the agents of
// the governed sessions among them, one event at a time.
func exportAudit(ctx context.Context, x *exportRun) error {
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
		x.counts.Audit++
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
					x.out.value("", newAuditExportEvent(e))
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
func restoreAudit(ctx context.Context, x *importRun, in *jsonIn, version int) error {
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
				var v auditExportEvent
				if err := in.decode(&v); err != nil {
					return err
				}
				e, err := v.event()
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
	x      *importRun
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
func (x *importRun) putAudit(h store.AuditHead, events []store.AuditEvent) error {
	what := "the audit chain of agent " + h.AgentID
	if x.w == nil {
		if err := sqlcore.CheckAuditChain(h, events); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return x.put(&x.counts.Audit, what, func(w store.RecordWriter) (bool, error) {
		return w.PutAuditChain(h, events)
	})
}

// auditStats is the audit facet in stats.
type auditStats struct {
	Chains int64 `json:"chains"`
	// Events counts the events ever appended (the heads' sequence
	// numbers), pruned ones included.
	Events int64 `json:"events_appended"`
}

func statsAudit(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	heads, err := st.Audit().Heads(ctx)
	if err != nil {
		return err
	}
	doc.Audit = &auditStats{Chains: int64(len(heads))}
	for _, h := range heads {
		doc.Audit.Events += h.Seq
	}
	return nil
}

func statsAuditRows(doc *statsJSON) [][2]string {
	if doc.Audit == nil {
		return nil
	}
	return [][2]string{{"audit chains", fmt.Sprintf("%d, %d events appended", doc.Audit.Chains, doc.Audit.Events)}}
}
