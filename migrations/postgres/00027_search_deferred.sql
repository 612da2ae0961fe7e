-- The search index is no longer written in the content's transaction
-- (see the SQLite migration of the same number for the design): the
-- content triggers' functions now queue the item's key in search_pending,
-- and the store folds the queue into search_docs in batches, each in a
-- transaction of its own that rebuilds its keys' documents from the
-- content and deletes exactly the queue rows it read. Queue rows are
-- deleted by id, never by a range: on PostgreSQL an identity value is
-- taken before its transaction commits, so a lower id may become visible
-- after a higher one.
--
-- search_state.enabled = false turns the index off for the whole database
-- (the store option WithSearchIndex(false)).

-- +goose Up
CREATE TABLE search_pending (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT   NOT NULL,
    session_pk BIGINT NOT NULL DEFAULT 0,
    owner      TEXT   COLLATE "C" NOT NULL DEFAULT '',
    pos        BIGINT NOT NULL DEFAULT 0,
    ref        TEXT   COLLATE "C" NOT NULL DEFAULT '',
    -- The content row's tenant: a tenant role (subject to row-level
    -- security) folds its tenant's keys only, with its tenant's content
    -- and documents, so that what it cannot see it leaves queued.
    tenant     TEXT   COLLATE "C" NOT NULL DEFAULT COALESCE(current_setting('sessionstore.tenant', true), '')
);
ALTER TABLE search_pending ENABLE ROW LEVEL SECURITY;
CREATE POLICY sessionstore_tenant ON search_pending
    USING (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true))
    WITH CHECK (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true));

CREATE TABLE search_state (
    one     INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    enabled BOOLEAN NOT NULL
);
INSERT INTO search_state (one, enabled) VALUES (1, TRUE);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT enabled FROM search_state) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('message', 0, OLD.session_id, OLD.seq, '', OLD.tenant);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.seq IS DISTINCT FROM OLD.seq) THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('message', 0, NEW.session_id, NEW.seq, '', NEW.tenant);
    END IF;
    IF TG_OP = 'INSERT' AND left(NEW.content, 7) <> 'ssenc1:' THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('message', 0, NEW.session_id, NEW.seq, '', NEW.tenant);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT enabled FROM search_state) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('event', OLD.session_pk, '', OLD.seq, '', OLD.tenant);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.session_pk IS DISTINCT FROM OLD.session_pk OR NEW.seq IS DISTINCT FROM OLD.seq) THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('event', NEW.session_pk, '', NEW.seq, '', NEW.tenant);
    END IF;
    IF TG_OP = 'INSERT' AND left(NEW.data, 7) <> 'ssenc1:' THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('event', NEW.session_pk, '', NEW.seq, '', NEW.tenant);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_traces() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT enabled FROM search_state) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('trace', 0, OLD.session_id, OLD.seq, '', OLD.tenant);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.seq IS DISTINCT FROM OLD.seq) THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('trace', 0, NEW.session_id, NEW.seq, '', NEW.tenant);
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('trace', 0, NEW.session_id, NEW.seq, '', NEW.tenant);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT enabled FROM search_state) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('artifact', 0, OLD.session_id, 0, OLD.uri, OLD.tenant);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.uri IS DISTINCT FROM OLD.uri) THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('artifact', 0, NEW.session_id, 0, NEW.uri, NEW.tenant);
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('artifact', 0, NEW.session_id, 0, NEW.uri, NEW.tenant);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT enabled FROM search_state) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('run', 0, OLD.session_id, 0, OLD.run_id, OLD.tenant);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.run_id IS DISTINCT FROM OLD.run_id) THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('run', 0, NEW.session_id, 0, NEW.run_id, NEW.tenant);
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO search_pending (kind, session_pk, owner, pos, ref, tenant) VALUES ('run', 0, NEW.session_id, 0, NEW.run_id, NEW.tenant);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
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

DELETE FROM search_docs AS d USING search_pending AS p
WHERE p.kind = d.kind AND p.session_pk = d.session_pk AND p.owner = d.owner AND p.pos = d.pos AND p.ref = d.ref;
UPDATE conversation_messages AS c SET content = content FROM search_pending AS p
WHERE p.kind = 'message' AND p.owner = c.session_id AND p.pos = c.seq;
UPDATE agent_events AS c SET data = data FROM search_pending AS p
WHERE p.kind = 'event' AND p.session_pk = c.session_pk AND p.pos = c.seq;
UPDATE conversation_trace_events AS c SET name = name FROM search_pending AS p
WHERE p.kind = 'trace' AND p.owner = c.session_id AND p.pos = c.seq;
UPDATE conversation_artifacts AS c SET tool_name = tool_name FROM search_pending AS p
WHERE p.kind = 'artifact' AND p.owner = c.session_id AND p.ref = c.uri;
UPDATE conversation_runs AS c SET status = status FROM search_pending AS p
WHERE p.kind = 'run' AND p.owner = c.session_id AND p.ref = c.run_id;
DROP TABLE search_state;
DROP TABLE search_pending;
