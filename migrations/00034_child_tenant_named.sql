-- An agent session's child rows (events, session state, the state log)
-- no longer take their tenant from a trigger: every INSERT of the library
-- names it (the tenant of the handle that found the session, which is the
-- session's). Migration 17's AFTER INSERT triggers looked the session row
-- up again for every event, state key and log row to compare tenants,
-- even when they were equal: measured at synchronous=NORMAL, 8-10% of the
-- CPU of an event append with a state delta. TestTenantChildRows reads
-- the tenant of every child row back.

-- +goose Up
DROP TRIGGER agent_events_tenant;
DROP TRIGGER agent_session_state_tenant;
DROP TRIGGER agent_state_log_tenant;

-- +goose Down
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
