-- Tenants for conversations and runtime sessions (issue 29, part 1).
-- Migration 17 gave the conversations table and its seven child tables,
-- runtime_sessions, runtime_cancel_causes and uploads a tenant column
-- (the library names the tenant in the inserts of the last three); this one
-- gives it to the retired histories of conversation lineage too
-- (conversation_retired and the messages they hold), makes child rows
-- carry their conversation's tenant, and leads the indexes that list
-- conversations by id or parent with the tenant and adds one on (tenant,
-- id) to runtime_sessions, so that one tenant's page is an index range.
-- conversations_updated stays (updated_at_ms, id): every append rewrites
-- it, and the retention sweep walks it across tenants; a tenant's
-- DeleteUpdatedBefore walks it filtered by tenant.
--
-- Conversation ids stay global primary keys: a tenant handle finds only
-- its own conversations (another tenant's id is ErrNotFound), and a create
-- of an id another tenant holds fails as a conflict.
--
-- Child rows: the library names no tenant in a child's INSERT (the
-- conversation's row does); AFTER INSERT triggers copy the conversation's
-- tenant into the child row when it differs, so a default-tenant write
-- pays one primary-key lookup of its conversation per row and nothing
-- else. A retired history and its messages are written with their
-- conversation's tenant by the library.

-- +goose Up
ALTER TABLE conversation_retired ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE conversation_retired_messages ADD COLUMN tenant TEXT NOT NULL DEFAULT '';

DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (tenant, parent_id, id);
CREATE INDEX conversations_tenant ON conversations (tenant, id);
CREATE INDEX runtime_sessions_tenant ON runtime_sessions (tenant, id);

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

-- A search document of a conversation (a message, trace, artifact or run;
-- session_id is the conversation's id) takes the conversation's tenant,
-- as an agent event's takes its session's (migration 17).
-- +goose StatementBegin
CREATE TRIGGER search_docs_conversation_tenant AFTER INSERT ON search_docs
WHEN NEW.kind <> 'event' AND (SELECT tenant FROM conversations WHERE id = NEW.session_id) <> NEW.tenant
BEGIN
    UPDATE search_docs SET tenant = (SELECT tenant FROM conversations WHERE id = NEW.session_id)
    WHERE doc = NEW.doc;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER search_docs_conversation_tenant;
DROP INDEX runtime_sessions_tenant;

DROP TRIGGER conversation_reports_tenant;

DROP TRIGGER conversation_run_events_tenant;

DROP TRIGGER conversation_runs_tenant;

DROP TRIGGER conversation_trace_events_tenant;

DROP TRIGGER conversation_artifacts_tenant;

DROP TRIGGER conversation_cost_records_tenant;

DROP TRIGGER conversation_messages_tenant;

DROP INDEX conversations_tenant;
DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (parent_id, id);
ALTER TABLE conversation_retired_messages DROP COLUMN tenant;
ALTER TABLE conversation_retired DROP COLUMN tenant;
