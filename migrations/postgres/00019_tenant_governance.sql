-- Tenants for governance, spend and audit (issue 29, part 2), PostgreSQL
-- dialect of the SQLite migration with the same number (see there). The
-- tables keep their tenant column, its default and the row-level
-- security policy of migration 17; only the keys change.

-- +goose Up
ALTER TABLE audit_heads DROP CONSTRAINT audit_heads_pkey;
ALTER TABLE audit_heads ADD PRIMARY KEY (tenant, agent_id);
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events ADD PRIMARY KEY (tenant, agent_id, chain, seq);
DROP INDEX governed_sessions_agent;
CREATE INDEX governed_sessions_agent ON governed_sessions (tenant, agent_id, status, expires_at_ms);
DROP INDEX spend_limits_agent;
CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (tenant, agent_id, metric, period) WHERE session_id IS NULL;

-- +goose Down
DELETE FROM spend_limits WHERE tenant <> '';
DROP INDEX spend_limits_agent;
CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (agent_id, metric, period) WHERE session_id IS NULL;
DROP INDEX governed_sessions_agent;
CREATE INDEX governed_sessions_agent ON governed_sessions (agent_id, status, expires_at_ms);
DELETE FROM audit_events WHERE tenant <> '';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events ADD PRIMARY KEY (agent_id, chain, seq);
DELETE FROM audit_heads WHERE tenant <> '';
ALTER TABLE audit_heads DROP CONSTRAINT audit_heads_pkey;
ALTER TABLE audit_heads ADD PRIMARY KEY (agent_id);
