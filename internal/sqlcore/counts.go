package sqlcore

import (
	"context"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// The counts of every facet (see store.Counter): three grouped queries and
// one row of scalar counts, in one read transaction. On SQLite the
// governed count scans only the covering (status, expires_at_ms) index,
// the runtime counts the agent_alias and (owner, mode, turn_running)
// indexes, and the agent apps and users merge the key-ordered indexes and
// primary keys without sorting; the conversation, upload and state counts
// scan their tables. No row travels to the caller.
const (
	cntGovernedSQL = `SELECT CASE WHEN status = 'active' AND expires_at_ms <= ? THEN 'expired' ELSE status END AS st,
		count(*) FROM governed_sessions GROUP BY st`
	// cntScalarsSQL: running turns, upload entries and bytes; agent
	// sessions, events, apps (as ListApps lists them), users (as ListUsers
	// lists them, per app), state keys of each scope; audit chains and
	// the events appended to them.
	cntScalarsSQL = `SELECT
		(SELECT count(*) FROM runtime_sessions WHERE turn_running = true),
		(SELECT count(*) FROM uploads),
		(SELECT CAST(COALESCE(sum(size_bytes), 0) AS BIGINT) FROM uploads),
		(SELECT count(*) FROM agent_sessions WHERE retired = 0),
		(SELECT CAST(COALESCE(sum(event_count), 0) AS BIGINT) FROM agent_sessions WHERE retired = 0),
		(SELECT count(*) FROM (SELECT app FROM agent_sessions WHERE retired = 0 UNION SELECT app FROM agent_app_state
			UNION SELECT app FROM agent_user_state) AS apps),
		(SELECT count(*) FROM (SELECT app, user_id FROM agent_sessions WHERE retired = 0
			UNION SELECT app, user_id FROM agent_user_state) AS users),
		(SELECT count(*) FROM agent_app_state),
		(SELECT count(*) FROM agent_user_state),
		(SELECT count(*) FROM agent_state_log WHERE seq = ` + StateHead + `),
		(SELECT count(*) FROM audit_heads) + (SELECT count(*) FROM governed_sessions WHERE audit_seq > 0),
		(SELECT CAST(COALESCE(sum(seq), 0) AS BIGINT) FROM audit_heads) +
			(SELECT CAST(COALESCE(sum(audit_seq), 0) AS BIGINT) FROM governed_sessions)`
)

// Counts counts the items of every facet (see store.Counter): store-wide,
// or the tenant's on a tenant's Store (aggregates_tenant.go).
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	now := rowcodec.ToMillis(s.now())
	q, args := s.aggs()
	var c store.Counts
	err := s.readTx(ctx, func(tx Tx) error {
		c = store.Counts{}
		g := &c.Governed
		g.ByStatus = map[store.Status]int64{store.StatusActive: 0, store.StatusClosed: 0, store.StatusExpired: 0}
		if err := tx.Query(q.cntGoverned, args(now), func(r Rows) error {
			var st string
			var n int64
			if err := r.Scan(&st, &n); err != nil {
				return err
			}
			g.ByStatus[store.Status(st)] += n
			g.Total += n
			return nil
		}); err != nil {
			return err
		}
		rt := &c.Runtime
		rt.ByAgent = map[string]int64{}
		if err := tx.Query(q.byAgent, args(), func(r Rows) error {
			var alias string
			var n int64
			if err := r.Scan(&alias, &n); err != nil {
				return err
			}
			rt.ByAgent[alias] = n
			rt.Total += n
			return nil
		}); err != nil {
			return err
		}
		cv := &c.Conversations
		cv.ByState = map[store.ConversationState]int64{}
		if err := conversationsByState(tx, q.convs, args(), func(st store.ConversationState, n, msgs, tokens int64, cost float64) {
			cv.ByState[st] = n
			cv.Total += n
			cv.Messages += msgs
			cv.TotalTokens += tokens
			cv.TotalCost += cost
		}); err != nil {
			return err
		}
		as, au := &c.AgentSessions, &c.Audit
		return tx.Scan(q.scalars, args(),
			&rt.RunningTurns, &rt.Uploads, &rt.UploadBytes,
			&as.Total, &as.Events, &as.Apps, &as.Users, &as.AppStateKeys, &as.UserStateKeys, &as.SessionStateKeys,
			&au.Chains, &au.EventsAppended)
	})
	if err != nil {
		return store.Counts{}, err
	}
	return c, nil
}
