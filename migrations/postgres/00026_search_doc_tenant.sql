-- The search-index triggers file each document under the tenant of the
-- row they index (NEW.tenant: every indexed table has carried its row's
-- tenant since migration 17). Before, a document took the column's
-- default, the writing transaction's sessionstore.tenant setting: right
-- for a tenant handle's writes, but a store-wide reindex (which rewrites
-- every row with no tenant set) filed every tenant's documents under the
-- default tenant, where the store's own searches found them and the
-- tenants' did not. The Up step also files the documents already moved
-- back under their session's or conversation's tenant.
--
-- The bodies are those of migrations 14 and 16 but for the tenant.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND left(NEW.content, 7) <> 'ssenc1:' THEN
        INSERT INTO search_docs (tenant, kind, owner, pos, session_id, role, at_us, body)
        VALUES (NEW.tenant, 'message', NEW.session_id, NEW.seq, NEW.session_id, NEW.role, NEW.created_at_ms * 1000,
                sessionstore_message_text(NEW.content));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND left(NEW.data, 7) <> 'ssenc1:' THEN
        INSERT INTO search_docs (tenant, kind, session_pk, pos, session_id, app, user_id, role, at_us, body)
        SELECT NEW.tenant, 'event', NEW.session_pk, NEW.seq, s.session_id, s.app, s.user_id,
               sessionstore_event_role(NEW.data), NEW.ts_us, sessionstore_event_text(NEW.data)
        FROM agent_sessions AS s WHERE s.pk = NEW.session_pk;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_traces() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'trace' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (tenant, kind, owner, pos, session_id, role, at_us, body)
        VALUES (NEW.tenant, 'trace', NEW.session_id, NEW.seq, NEW.session_id, NEW.kind, NEW.created_at_ms * 1000,
                concat_ws(' ', NEW.kind, NEW.name));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'artifact' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.uri;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (tenant, kind, owner, ref, session_id, role, at_us, body)
        VALUES (NEW.tenant, 'artifact', NEW.session_id, NEW.uri, NEW.session_id, NEW.tool_name, NEW.updated_at_ms * 1000,
                concat_ws(' ', NEW.uri, NEW.artifact_id, NEW.tool_name));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'run' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.run_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (tenant, kind, owner, ref, session_id, role, at_us, body)
        VALUES (NEW.tenant, 'run', NEW.session_id, NEW.run_id, NEW.session_id, NEW.status, NEW.created_at_ms * 1000, NEW.run_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

UPDATE search_docs AS d SET tenant = s.tenant
FROM agent_sessions AS s
WHERE d.session_pk <> 0 AND s.pk = d.session_pk AND d.tenant <> s.tenant;
UPDATE search_docs AS d SET tenant = c.tenant
FROM conversations AS c
WHERE d.session_pk = 0 AND c.id = d.owner AND d.tenant <> c.tenant;

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND left(NEW.content, 7) <> 'ssenc1:' THEN
        INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
        VALUES ('message', NEW.session_id, NEW.seq, NEW.session_id, NEW.role, NEW.created_at_ms * 1000,
                sessionstore_message_text(NEW.content));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND left(NEW.data, 7) <> 'ssenc1:' THEN
        INSERT INTO search_docs (kind, session_pk, pos, session_id, app, user_id, role, at_us, body)
        SELECT 'event', NEW.session_pk, NEW.seq, s.session_id, s.app, s.user_id,
               sessionstore_event_role(NEW.data), NEW.ts_us, sessionstore_event_text(NEW.data)
        FROM agent_sessions AS s WHERE s.pk = NEW.session_pk;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_traces() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'trace' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
        VALUES ('trace', NEW.session_id, NEW.seq, NEW.session_id, NEW.kind, NEW.created_at_ms * 1000, concat_ws(' ', NEW.kind, NEW.name));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'artifact' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.uri;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
        VALUES ('artifact', NEW.session_id, NEW.uri, NEW.session_id, NEW.tool_name, NEW.updated_at_ms * 1000,
                concat_ws(' ', NEW.uri, NEW.artifact_id, NEW.tool_name));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'run' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.run_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
        VALUES ('run', NEW.session_id, NEW.run_id, NEW.session_id, NEW.status, NEW.created_at_ms * 1000, NEW.run_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
