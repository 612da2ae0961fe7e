-- Tenants: every row of a session (and of what hangs off it) carries the
-- tenant it belongs to. '' is the default tenant: the rows written by a
-- store opened without a tenant, which a tenant handle never sees.
--
-- Keys are unique per tenant where the tenant handle addresses them: an
-- agent session's (app, user, session) and the app and user state keys.
-- The state tables keep their old key order as a plain index for the
-- retention sweep of orphaned state, which walks every tenant; every lookup
-- of a session by key names the tenant.
--
-- The tenant column's default is the transaction's setting
-- sessionstore.tenant (set_config(..., true), as SET LOCAL does), which a
-- tenant handle sets in every transaction: child rows (events, state,
-- search documents written by triggers, ...) get their tenant without any
-- INSERT naming it. The column is added with a constant default first, so
-- that PostgreSQL does not rewrite the tables, and then given the setting
-- as its default.
--
-- Row-level security: every table with a tenant has a policy that shows a
-- role subject to it only the rows of the transaction's tenant, and lets it
-- write only rows of that tenant; the default tenant '' and a transaction
-- without a tenant see nothing. The owner of the tables (the role that
-- migrates, and the library's own connections) is not subject to the
-- policies (no FORCE ROW LEVEL SECURITY): it keeps full access for
-- maintenance. A tenant role is a role that is granted the tables and is
-- not their owner (see pgstore's documentation).

-- +goose Up
DROP INDEX agent_sessions_key;
ALTER TABLE agent_app_state DROP CONSTRAINT agent_app_state_pkey;
ALTER TABLE agent_user_state DROP CONSTRAINT agent_user_state_pkey;

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'agent_sessions', 'agent_events', 'agent_session_state', 'agent_state_log',
        'agent_app_state', 'agent_user_state',
        'conversations', 'conversation_messages', 'conversation_cost_records',
        'conversation_artifacts', 'conversation_trace_events', 'conversation_runs',
        'conversation_run_events', 'conversation_reports',
        'governed_sessions', 'governed_use_requests',
        'runtime_sessions', 'runtime_cancel_causes', 'uploads',
        'spend_limits', 'spend_reservations', 'audit_events', 'audit_heads',
        'retention_holds', 'search_docs']
    LOOP
        EXECUTE format('ALTER TABLE %I ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT %L', t, '');
        EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant SET DEFAULT COALESCE(current_setting(%L, true), %L)',
            t, 'sessionstore.tenant', '');
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY sessionstore_tenant ON %I
            USING (tenant <> %L AND tenant = current_setting(%L, true))
            WITH CHECK (tenant <> %L AND tenant = current_setting(%L, true))',
            t, '', 'sessionstore.tenant', '', 'sessionstore.tenant');
    END LOOP;
END
$$;
-- +goose StatementEnd

CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (tenant, app, user_id, session_id) WHERE retired = 0;
ALTER TABLE agent_app_state ADD PRIMARY KEY (tenant, app, key);
CREATE INDEX agent_app_state_app ON agent_app_state (app, key);
ALTER TABLE agent_user_state ADD PRIMARY KEY (tenant, app, user_id, key);
CREATE INDEX agent_user_state_app ON agent_user_state (app, user_id, key);

-- +goose Down
-- Rows of tenants cannot go back to a schema without tenants: their keys
-- may collide with the default tenant's. The down step keeps the default
-- tenant's rows only.
DELETE FROM agent_sessions WHERE tenant <> '';
DELETE FROM agent_app_state WHERE tenant <> '';
DELETE FROM agent_user_state WHERE tenant <> '';
DROP INDEX agent_user_state_app;
DROP INDEX agent_app_state_app;
DROP INDEX agent_sessions_key;
ALTER TABLE agent_user_state DROP CONSTRAINT agent_user_state_pkey;
ALTER TABLE agent_app_state DROP CONSTRAINT agent_app_state_pkey;

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'agent_sessions', 'agent_events', 'agent_session_state', 'agent_state_log',
        'agent_app_state', 'agent_user_state',
        'conversations', 'conversation_messages', 'conversation_cost_records',
        'conversation_artifacts', 'conversation_trace_events', 'conversation_runs',
        'conversation_run_events', 'conversation_reports',
        'governed_sessions', 'governed_use_requests',
        'runtime_sessions', 'runtime_cancel_causes', 'uploads',
        'spend_limits', 'spend_reservations', 'audit_events', 'audit_heads',
        'retention_holds', 'search_docs']
    LOOP
        EXECUTE format('DROP POLICY sessionstore_tenant ON %I', t);
        EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I DROP COLUMN tenant', t);
    END LOOP;
END
$$;
-- +goose StatementEnd

ALTER TABLE agent_app_state ADD PRIMARY KEY (app, key);
ALTER TABLE agent_user_state ADD PRIMARY KEY (app, user_id, key);
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id) WHERE retired = 0;
