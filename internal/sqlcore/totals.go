package sqlcore

import (
	"context"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Store-wide aggregates for inspection tools (see store.Totaler): grouped
// queries in one read transaction, so that the figures are of one
// snapshot and no row travels to the caller that it does not show. A
// conversation a sweep is removing over several transactions (its tenant
// removingTenant, sweep_staged.go) is gone for them as for every read.

const dayMS = 24 * 60 * 60 * 1000

const (
	totGovernedSQL = `SELECT CASE WHEN status = 'active' AND expires_at_ms <= ? THEN 'expired' ELSE status END AS st,
		count(*), CAST(COALESCE(sum(calls_made), 0) AS BIGINT), CAST(COALESCE(sum(call_budget), 0) AS BIGINT)
		FROM governed_sessions GROUP BY st`
	totAgentsSQL = `SELECT agent_id, CAST(sum(calls_made) AS BIGINT) AS n FROM governed_sessions
		GROUP BY agent_id HAVING sum(calls_made) > 0 ORDER BY n DESC, agent_id LIMIT ?`
	totConversationsSQL = `SELECT state, count(*), CAST(COALESCE(sum(message_count), 0) AS BIGINT),
		CAST(COALESCE(sum(total_tokens), 0) AS BIGINT), COALESCE(sum(total_cost), 0)
		FROM conversations WHERE tenant <> '_removing' GROUP BY state`
	totDaysSQL = `SELECT updated_at_ms / 86400000 AS d, count(*), CAST(COALESCE(sum(total_tokens), 0) AS BIGINT),
		COALESCE(sum(total_cost), 0) FROM conversations WHERE updated_at_ms >= ? AND tenant <> '_removing' GROUP BY d ORDER BY d`
	totTopCostSQL = `SELECT ` + summaryColumns + ` FROM conversations WHERE tenant <> '_removing' ORDER BY total_cost DESC, id LIMIT ?`
	totRecentSQL  = `SELECT ` + summaryColumns + ` FROM conversations WHERE tenant <> '_removing' ORDER BY updated_at_ms DESC, id DESC LIMIT ?`
)

// Totals computes the aggregates (see store.Totaler): store-wide, of the
// default tenant's rows when req.DefaultTenantOnly asks (on the Store
// itself), or of the tenant's rows on a tenant's Store
// (aggregates_tenant.go).
func (s *Store) Totals(ctx context.Context, req store.TotalsRequest) (store.Totals, error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Totals{}, err
	}
	now := rowcodec.ToMillis(s.now())
	q, args := s.aggs()
	if req.DefaultTenantOnly && s.tenant == "" {
		q, args = defaultTenantAggs()
	}
	var t store.Totals
	err = s.readTx(ctx, func(tx Tx) error {
		t = store.Totals{}
		g := &t.Governed
		g.ByStatus = map[store.Status]int64{store.StatusActive: 0, store.StatusClosed: 0, store.StatusExpired: 0}
		g.TopAgents = []store.AgentCalls{}
		if err := tx.Query(q.governed, args(now), func(r Rows) error {
			var st string
			var n, calls, budget int64
			if err := r.Scan(&st, &n, &calls, &budget); err != nil {
				return err
			}
			g.ByStatus[store.Status(st)] += n
			g.Total += n
			g.CallsMade += calls
			g.CallBudget += budget
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Query(q.agents, args(req.Top), func(r Rows) error {
			var a store.AgentCalls
			err := r.Scan(&a.AgentID, &a.CallsMade)
			g.TopAgents = append(g.TopAgents, a)
			return err
		}); err != nil {
			return err
		}
		c := &t.Conversations
		c.ByState = map[store.ConversationState]int64{}
		c.Days = []store.DayTotals{}
		if err := conversationsByState(tx, q.convs, args(), func(st store.ConversationState, n, msgs, tokens int64, cost float64) {
			c.ByState[st] = n
			c.Total += n
			c.Messages += msgs
			c.TotalTokens += tokens
			c.TotalCost += cost
		}); err != nil {
			return err
		}
		if !req.Since.IsZero() {
			if err := tx.Query(q.days, args(rowcodec.ToMillis(req.Since)), func(r Rows) error {
				var d store.DayTotals
				var day int64
				err := r.Scan(&day, &d.Conversations, &d.TotalTokens, &d.TotalCost)
				d.Day = rowcodec.FromMillis(day * dayMS)
				c.Days = append(c.Days, d)
				return err
			}); err != nil {
				return err
			}
		}
		var rows []summaryRow
		if err := tx.Select(&rows, q.topCost, args(req.Top)...); err != nil {
			return err
		}
		c.TopByCost = summaries(rows)
		rows = nil
		if err := tx.Select(&rows, q.recent, args(req.Top)...); err != nil {
			return err
		}
		c.Recent = summaries(rows)
		return nil
	})
	if err != nil {
		return store.Totals{}, err
	}
	return t, nil
}

// summaries converts listing rows.
func summaries(rows []summaryRow) []store.ConversationSummary {
	out := make([]store.ConversationSummary, len(rows))
	for i := range rows {
		out[i] = rows[i].summary()
	}
	return out
}

// conversationsByState reads the conversations' count, messages, tokens
// and cost per state (query: totConversationsSQL or a tenant's, with its
// arguments) and calls add for each state.
func conversationsByState(tx Tx, query string, args []any, add func(st store.ConversationState, n, msgs, tokens int64, cost float64)) error {
	return tx.Query(query, args, func(r Rows) error {
		var st string
		var n, msgs, tokens int64
		var cost float64
		if err := r.Scan(&st, &n, &msgs, &tokens, &cost); err != nil {
			return err
		}
		add(store.ConversationState(st), n, msgs, tokens, cost)
		return nil
	})
}
