-- A conversation's child rows (messages, cost records, artifacts, trace
-- events, runs, run events, reports) and every search document no longer
-- take their tenant from a trigger: every INSERT of the library names it,
-- as migration 34 made it so for an agent session's child rows. A child's
-- tenant is the tenant of the handle that found its conversation, which
-- is the conversation's; a search document's is its source row's (the
-- fold reads it from the event's session or the conversation's child
-- row, and the sealed write path names the handle's). Migrations 17 and
-- 18's AFTER INSERT triggers looked the conversation (or the session) up
-- once more for every such row to compare two equal tenants.
-- TestTenantChildRows reads the tenant of every child row back.

-- +goose Up
DROP TRIGGER search_docs_tenant;
DROP TRIGGER conversation_messages_tenant;
DROP TRIGGER conversation_cost_records_tenant;
DROP TRIGGER conversation_artifacts_tenant;
DROP TRIGGER conversation_trace_events_tenant;
DROP TRIGGER conversation_runs_tenant;
DROP TRIGGER conversation_run_events_tenant;
DROP TRIGGER conversation_reports_tenant;
DROP TRIGGER search_docs_conversation_tenant;

-- +goose Down
-- +goose StatementBegin
CREATE TRIGGER search_docs_tenant AFTER INSERT ON search_docs
WHEN NEW.kind = 'event' AND (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk) <> NEW.tenant
BEGIN
    UPDATE search_docs SET tenant = (SELECT tenant FROM agent_sessions WHERE pk = NEW.session_pk)
    WHERE doc = NEW.doc;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_messages_tenant AFTER INSERT ON conversation_messages
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_messages SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_cost_records_tenant AFTER INSERT ON conversation_cost_records
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_cost_records SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_artifacts_tenant AFTER INSERT ON conversation_artifacts
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_artifacts SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND uri = NEW.uri;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_trace_events_tenant AFTER INSERT ON conversation_trace_events
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_trace_events SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_runs_tenant AFTER INSERT ON conversation_runs
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_runs SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND run_id = NEW.run_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_run_events_tenant AFTER INSERT ON conversation_run_events
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_run_events SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND run_id = NEW.run_id AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_reports_tenant AFTER INSERT ON conversation_reports
WHEN (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE conversation_reports SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_conversation_tenant AFTER INSERT ON search_docs
WHEN NEW.kind <> 'event' AND (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE search_docs SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE doc = NEW.doc;
END;
-- +goose StatementEnd
