-- Tenants: every row of a session (and of what hangs off it) carries the
-- tenant it belongs to. '' is the default tenant: the rows written by a
-- store opened without a tenant, which a tenant handle never sees.
--
-- Keys are unique per tenant where the tenant handle addresses them: an
-- agent session's (app, user, session) and the app and user state keys,
-- so that one tenant cannot learn from ErrConflict that another uses a
-- key. The state tables keep their old key order as a plain index for the
-- retention sweep of orphaned state, which walks every tenant; the
-- sessions' key index gains the tenant in front and nothing else (every
-- lookup by key names the tenant: one more index would cost every create
-- a page).
--
-- Child rows get their tenant from their session without the INSERT
-- naming it: an AFTER INSERT trigger copies it from the parent row when
-- the parent belongs to a tenant (a default-tenant append pays one lookup
-- of the parent by primary key and writes nothing more).

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
DROP INDEX agent_sessions_key;
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (tenant, app, user_id, session_id) WHERE retired = 0;

ALTER TABLE agent_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_session_state ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_state_log ADD COLUMN tenant TEXT NOT NULL DEFAULT '';

CREATE TABLE agent_app_state_new (
    tenant TEXT NOT NULL DEFAULT '',
    app    TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (tenant, app, key)
) STRICT, WITHOUT ROWID;
INSERT INTO agent_app_state_new (tenant, app, key, value) SELECT '', app, key, value FROM agent_app_state;
DROP TABLE agent_app_state;
ALTER TABLE agent_app_state_new RENAME TO agent_app_state;
CREATE INDEX agent_app_state_app ON agent_app_state (app, key);

CREATE TABLE agent_user_state_new (
    tenant  TEXT NOT NULL DEFAULT '',
    app     TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (tenant, app, user_id, key)
) STRICT, WITHOUT ROWID;
INSERT INTO agent_user_state_new (tenant, app, user_id, key, value) SELECT '', app, user_id, key, value FROM agent_user_state;
DROP TABLE agent_user_state;
ALTER TABLE agent_user_state_new RENAME TO agent_user_state;
CREATE INDEX agent_user_state_app ON agent_user_state (app, user_id, key);

ALTER TABLE conversations ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_messages ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_cost_records ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_artifacts ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_trace_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_runs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_run_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_reports ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE governed_sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE governed_use_requests ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE runtime_cancel_causes ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_limits ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_reservations ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_heads ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE retention_holds ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE search_docs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';

-- +goose StatementBegin
CREATE TRIGGER agent_events_tenant AFTER INSERT ON agent_events
WHEN (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk) <> NEW.tenant
BEGIN
    UPDATE agent_events SET tenant = (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk)
    WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_session_state_tenant AFTER INSERT ON agent_session_state
WHEN (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk) <> NEW.tenant
BEGIN
    UPDATE agent_session_state SET tenant = (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk)
    WHERE session_pk = NEW.session_pk AND key = NEW.key;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_state_log_tenant AFTER INSERT ON agent_state_log
WHEN (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk) <> NEW.tenant
BEGIN
    UPDATE agent_state_log SET tenant = (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk)
    WHERE session_pk = NEW.session_pk AND key = NEW.key AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- An agent event's search document takes its session's tenant too.
-- +goose StatementBegin
CREATE TRIGGER search_docs_tenant AFTER INSERT ON search_docs
WHEN NEW.kind = 'event' AND (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk) <> NEW.tenant
BEGIN
    UPDATE search_docs SET tenant = (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk)
    WHERE doc = NEW.doc;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER search_docs_tenant;
DROP TRIGGER agent_state_log_tenant;
DROP TRIGGER agent_session_state_tenant;
DROP TRIGGER agent_events_tenant;

ALTER TABLE search_docs DROP COLUMN tenant;
ALTER TABLE retention_holds DROP COLUMN tenant;
ALTER TABLE audit_heads DROP COLUMN tenant;
ALTER TABLE audit_events DROP COLUMN tenant;
ALTER TABLE spend_reservations DROP COLUMN tenant;
ALTER TABLE spend_limits DROP COLUMN tenant;
ALTER TABLE uploads DROP COLUMN tenant;
ALTER TABLE runtime_cancel_causes DROP COLUMN tenant;
ALTER TABLE runtime_sessions DROP COLUMN tenant;
ALTER TABLE governed_use_requests DROP COLUMN tenant;
ALTER TABLE governed_sessions DROP COLUMN tenant;
ALTER TABLE conversation_reports DROP COLUMN tenant;
ALTER TABLE conversation_run_events DROP COLUMN tenant;
ALTER TABLE conversation_runs DROP COLUMN tenant;
ALTER TABLE conversation_trace_events DROP COLUMN tenant;
ALTER TABLE conversation_artifacts DROP COLUMN tenant;
ALTER TABLE conversation_cost_records DROP COLUMN tenant;
ALTER TABLE conversation_messages DROP COLUMN tenant;
ALTER TABLE conversations DROP COLUMN tenant;

-- Rows of tenants cannot go back to a schema without tenants: their keys
-- may collide with the default tenant's. The down step keeps the default
-- tenant's rows only.
DELETE FROM agent_sessions WHERE tenant <> '';
ALTER TABLE agent_user_state RENAME TO agent_user_state_tenants;
CREATE TABLE agent_user_state (
    app     TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (app, user_id, key)
) STRICT, WITHOUT ROWID;
INSERT INTO agent_user_state SELECT app, user_id, key, value FROM agent_user_state_tenants WHERE tenant = '';
DROP TABLE agent_user_state_tenants;
ALTER TABLE agent_app_state RENAME TO agent_app_state_tenants;
CREATE TABLE agent_app_state (
    app   TEXT NOT NULL,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (app, key)
) STRICT, WITHOUT ROWID;
INSERT INTO agent_app_state SELECT app, key, value FROM agent_app_state_tenants WHERE tenant = '';
DROP TABLE agent_app_state_tenants;
ALTER TABLE agent_state_log DROP COLUMN tenant;
ALTER TABLE agent_session_state DROP COLUMN tenant;
ALTER TABLE agent_events DROP COLUMN tenant;
DROP INDEX agent_sessions_key;
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id) WHERE retired = 0;
ALTER TABLE agent_sessions DROP COLUMN tenant;
