package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// Demo prints what the demo (demo.Seed) wrote and read back, step by
// step; the steps a failure stopped are nil. kind is the short word of a
// refused call ("budget", "tool").
func Demo(out io.Writer, r demo.Result, kind func(error) string) {
	if r.Governed != nil {
		demoGoverned(out, r.Governed, kind)
	}
	if r.Conversation != nil {
		demoConversation(out, r.Governed.Session.ID, r.Conversation)
	}
	if r.Runtime != nil {
		demoRuntime(out, r.Runtime)
	}
	if r.Spend != nil {
		demoSpend(out, r.Governed.Session.ID, r.Spend)
	}
	if r.ConversationFork != nil {
		demoConversationFork(out, r.ConversationFork)
	}
	if r.AgentSession != nil {
		demoAgentSession(out, r.AgentSession)
	}
	// The search folded into the index what the demo wrote (a command
	// runs no background indexer), so that the console of sessionctl
	// serve, which is read-only and cannot fold, finds it too.
	for _, h := range r.SearchHits {
		fmt.Fprintf(out, "\nsearch: \"durable\" is said in %s #%d of conversation %s (sessionctl search durable, or the console's search box)\n",
			h.Kind, h.Seq, h.SessionID)
	}
	if r.Policies != nil {
		fmt.Fprintf(out, "\nretention: %d policies stored (sessionctl retention); sessionctl sweep --dry-run says what they would remove\n",
			len(r.Policies))
	}
}

// demoGoverned: a budget of 3 calls spent, with the refusals.
func demoGoverned(out io.Writer, g *demo.Governed, kind func(error) string) {
	sess := g.Session
	fmt.Fprintf(out, "\ngoverned session %s\n  agent %s, tools %v, budget %d calls, expires in %s\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget, humanize.Duration(sess.TimeLimit))
	for _, u := range g.Uses {
		if u.Refused != nil {
			fmt.Fprintf(out, "  use %-12s refused (%s): %v\n", u.Tool, kind(u.Refused), u.Refused)
			continue
		}
		fmt.Fprintf(out, "  use %-12s allowed: %d of %d calls made\n", u.Tool, u.Session.CallsMade, u.Session.CallBudget)
	}
	fmt.Fprintf(out, "  stored durably: %d of %d calls made, status %s\n", g.Final.CallsMade, g.Final.CallBudget, g.Final.Status)
}

// demoConversation: messages with a tool call and its result, usage
// and cost, appended in one transaction.
func demoConversation(out io.Writer, id string, c *demo.Conversation) {
	fmt.Fprintf(out, "\nconversation %s\n  appended %d messages in one transaction (positions %d to %d)\n",
		id, c.Appended.MessageCount, c.Appended.FirstSeq, c.Appended.MessageCount-1)
	for _, m := range c.Last {
		fmt.Fprintf(out, "  #%d %-9s %s\n", m.Seq, m.Role, tablefmt.Clip(MessageText(m), 70))
	}
	// The spend section below settles its calls into this conversation
	// too: these are its totals so far.
	fmt.Fprintf(out, "  stored durably: %d messages; usage so far %d tokens, %s\n", c.Info.MessageCount, c.Info.TotalUsage.TotalTokens, USD(c.Info.TotalCost))
}

// demoRuntime: the runtime session, its upload and the turn a
// client cancelled.
func demoRuntime(out io.Writer, r *demo.Runtime) {
	s := r.Session
	fmt.Fprintf(out, "\nruntime session %s\n  agent %s, mode %s, owner %s, overrides: %s, history %d messages\n",
		s.ID, s.AgentAlias, s.ChatMode, s.OwnerID, Overrides(r.Overrides), r.HistoryLen)
	fmt.Fprintf(out, "  upload %s: %d bytes, sha256 %s...\n", r.Upload.RefID, r.Upload.SizeBytes, r.Upload.SHA256[:16])
	fmt.Fprintf(out, "  turn %d started\n", r.Generation)
	fmt.Fprintf(out, "  turn %d cancelled by the client: the turn's context reports %s\n", r.Generation, r.ContextCause)
	fmt.Fprintf(out, "  recorded cause read back: %s (%v), a second read finds it taken (%v)\n", r.Cause, r.Taken, r.TakenAgain)
	fmt.Fprintf(out, "  stored durably: turn %s, 1 upload\n", Turn(r.Final.Turn))
}

// demoSpend: a cost limit stopping the agent, and the audit trail
// that recorded every decision.
func demoSpend(out io.Writer, id string, s *demo.Spend) {
	fmt.Fprintf(out, "\nspend-limited session %s\n  agent %s, at most 0.05 USD and 100000 tokens per hour\n", s.Session.ID, s.Session.AgentID)
	for call := 1; call <= s.Settled; call++ {
		fmt.Fprintf(out, "  call %d: reserved %s, settled %s (%d tokens)\n", call, humanize.Money(s.Bound.CostMicros, demo.Currency),
			humanize.Money(s.Actual.CostMicros, demo.Currency), s.Actual.TotalTokens())
	}
	if se := s.Limit; se != nil {
		fmt.Fprintf(out, "  call %d: reserve %s refused (%v): %s spent, %s reserved of %s\n", s.Settled+1, humanize.Money(s.Bound.CostMicros, demo.Currency),
			s.Refusal, humanize.Money(se.Spent, se.Currency), humanize.Money(se.Reserved, se.Currency), humanize.Money(se.Limit, se.Currency))
	}
	fmt.Fprintf(out, "  conversation %s now: %d tokens, %s (the settled calls' usage added)\n",
		id, s.Conversation.TotalUsage.TotalTokens, USD(s.Conversation.TotalCost))
	cost := s.Status.Limits[0]
	fmt.Fprintf(out, "  stored durably: %s spent of %s, nothing reserved; the agent is stopped\n",
		humanize.Money(cost.Spent, cost.Currency), humanize.Money(cost.Limit, cost.Currency))
	verdict := "verify"
	if !s.Audit.OK() {
		verdict = "DO NOT verify"
	}
	fmt.Fprintf(out, "  audit: %d decisions of this session recorded; %d %s with %d %s %s\n", s.AuditEvents,
		s.Audit.Chains, clitext.Plural(int(s.Audit.Chains), "chain", "chains"), s.Audit.Events, clitext.Plural(int(s.Audit.Events), "event", "events"), verdict)
}

// demoConversationFork: the conversation forked after its tool call,
// its compaction record, and the tree.
func demoConversationFork(out io.Writer, f *demo.ConversationFork) {
	read := []string{fmt.Sprintf("#%d (the record)", f.Tail.Summary.Seq)}
	for _, m := range f.Tail.Messages {
		read = append(read, fmt.Sprintf("#%d", m.Seq))
	}
	fmt.Fprintf(out, "\nconversation %s\n  forked %s at message 1 (no messages copied), then its own answer at #2\n", f.ID, f.From)
	fmt.Fprintf(out, "  compaction record at message %d summarises messages 0-1 (the originals stay); a summary read returns %s\n",
		f.Compaction.FirstSeq, strings.Join(read, ", "))
	fmt.Fprintf(out, "  the tree (sessionctl history %s):\n", f.ID)
	depths := store.ConversationDepths(f.History)
	for i, n := range f.History {
		fmt.Fprintf(out, "    %s%s: %d messages, %s\n", strings.Repeat("  ", depths[i]), n.ID, n.Messages, n.Status)
	}
}

// demoAgentSession: an agent session's history as a tree (a
// compaction record, a fork that goes on on its own), and what a runtime
// reads back ("latest summary + what follows").
func demoAgentSession(out io.Writer, a *demo.AgentSession) {
	key, retry := a.Key, a.Fork
	fmt.Fprintf(out, "\nagent session %s/%s/%s\n  6 events, each setting session state step\n", key.App, key.User, key.Session)
	fmt.Fprintf(out, "  compaction record at event %d summarises events 1-4 (the originals stay); a summary read returns %s\n",
		a.Compaction.Event.Seq, eventIDList(a.SummaryRead))
	fmt.Fprintf(out, "  forked at event 5 as %s (no events copied; its state then: step %s), which went on: %s\n",
		retry.Session, a.ForkState.State.Session["step"], eventIDList(a.ForkEvents))
	fmt.Fprintf(out, "  the tree (sessionctl history %s %s %s):\n", retry.App, retry.User, retry.Session)
	depths := store.LineageDepths(a.History)
	for i, n := range a.History {
		fmt.Fprintf(out, "    %*s%s: %d events, %s\n", 2*depths[i], "", n.Key.Session, n.EventCount, n.Status)
	}
}

// eventIDList is "a, b, c".
func eventIDList(evs []store.AgentEvent) string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return strings.Join(ids, ", ")
}
