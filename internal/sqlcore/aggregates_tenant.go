package sqlcore

// The aggregates of Totals and Counts come in two sets of queries. The
// Store itself (the default tenant's core) computes them store-wide, over
// the rows of every tenant, as it always has: they are the operator's
// view of the whole database. A tenant's core (WithTenant, the tenant
// handle) computes them over that tenant's rows only: every table they
// read has a tenant column, and each query names it. The tenant is always
// the last argument of a tenant's query (its numbered placeholder), so
// that one argument list serves both sets.

// aggQueries is one set of the aggregate queries.
type aggQueries struct {
	governed, agents, convs, days, topCost, recent string // Totals
	cntGoverned, byAgent, scalars                  string // Counts
}

var (
	storeWideAggs = aggQueries{
		governed: totGovernedSQL, agents: totAgentsSQL, convs: totConversationsSQL, days: totDaysSQL,
		topCost: totTopCostSQL, recent: totRecentSQL,
		cntGoverned: cntGovernedSQL, byAgent: rtCountByAgentSQL, scalars: cntScalarsSQL,
	}
	tenantAggs = aggQueries{
		governed: `SELECT CASE WHEN status = 'active' AND expires_at_ms <= ?1 THEN 'expired' ELSE status END AS st,
			count(*), CAST(COALESCE(sum(calls_made), 0) AS BIGINT), CAST(COALESCE(sum(call_budget), 0) AS BIGINT)
			FROM governed_sessions WHERE tenant = ?2 GROUP BY st`,
		agents: `SELECT agent_id, CAST(sum(calls_made) AS BIGINT) AS n FROM governed_sessions WHERE tenant = ?2
			GROUP BY agent_id HAVING sum(calls_made) > 0 ORDER BY n DESC, agent_id LIMIT ?1`,
		convs: `SELECT state, count(*), CAST(COALESCE(sum(message_count), 0) AS BIGINT),
			CAST(COALESCE(sum(total_tokens), 0) AS BIGINT), COALESCE(sum(total_cost), 0)
			FROM conversations WHERE tenant = ?1 GROUP BY state`,
		days: `SELECT updated_at_ms / 86400000 AS d, count(*), CAST(COALESCE(sum(total_tokens), 0) AS BIGINT),
			COALESCE(sum(total_cost), 0) FROM conversations WHERE tenant = ?2 AND updated_at_ms >= ?1 GROUP BY d ORDER BY d`,
		topCost: `SELECT ` + summaryColumns + ` FROM conversations WHERE tenant = ?2 ORDER BY total_cost DESC, id LIMIT ?1`,
		recent:  `SELECT ` + summaryColumns + ` FROM conversations WHERE tenant = ?2 ORDER BY updated_at_ms DESC, id DESC LIMIT ?1`,
		cntGoverned: `SELECT CASE WHEN status = 'active' AND expires_at_ms <= ?1 THEN 'expired' ELSE status END AS st,
			count(*) FROM governed_sessions WHERE tenant = ?2 GROUP BY st`,
		byAgent: `SELECT agent_alias, count(*) AS n FROM runtime_sessions WHERE tenant = ?1 GROUP BY agent_alias`,
		// As cntScalarsSQL, of the tenant's rows.
		scalars: `SELECT
			(SELECT count(*) FROM runtime_sessions WHERE tenant = ?1 AND turn_running = true),
			(SELECT count(*) FROM uploads WHERE tenant = ?1),
			(SELECT CAST(COALESCE(sum(size_bytes), 0) AS BIGINT) FROM uploads WHERE tenant = ?1),
			(SELECT count(*) FROM agent_sessions WHERE tenant = ?1 AND retired = 0),
			(SELECT CAST(COALESCE(sum(event_count), 0) AS BIGINT) FROM agent_sessions WHERE tenant = ?1 AND retired = 0),
			(SELECT count(*) FROM (SELECT app FROM agent_sessions WHERE tenant = ?1 AND retired = 0
				UNION SELECT app FROM agent_app_state WHERE tenant = ?1
				UNION SELECT app FROM agent_user_state WHERE tenant = ?1) AS apps),
			(SELECT count(*) FROM (SELECT app, user_id FROM agent_sessions WHERE tenant = ?1 AND retired = 0
				UNION SELECT app, user_id FROM agent_user_state WHERE tenant = ?1) AS users),
			(SELECT count(*) FROM agent_app_state WHERE tenant = ?1),
			(SELECT count(*) FROM agent_user_state WHERE tenant = ?1),
			(SELECT count(*) FROM agent_state_log WHERE tenant = ?1 AND seq = ` + StateHead + `),
			(SELECT count(*) FROM audit_heads WHERE tenant = ?1)
				+ (SELECT count(*) FROM governed_sessions WHERE tenant = ?1 AND audit_seq > 0),
			(SELECT CAST(COALESCE(sum(seq), 0) AS BIGINT) FROM audit_heads WHERE tenant = ?1) +
				(SELECT CAST(COALESCE(sum(audit_seq), 0) AS BIGINT) FROM governed_sessions WHERE tenant = ?1)`,
	}
)

// aggs returns the Store's aggregate queries and the function that
// completes their arguments: the tenant's, with the tenant appended.
func (s *Store) aggs() (*aggQueries, func(args ...any) []any) {
	if s.tenant == "" {
		return &storeWideAggs, func(args ...any) []any { return args }
	}
	return &tenantAggs, func(args ...any) []any { return append(args, s.tenant) }
}

// defaultTenantAggs returns the tenant's aggregate queries for the
// default tenant (the empty name): the rows the Store's own facets list
// (store.TotalsRequest.DefaultTenantOnly).
func defaultTenantAggs() (*aggQueries, func(args ...any) []any) {
	return &tenantAggs, func(args ...any) []any { return append(args, "") }
}
