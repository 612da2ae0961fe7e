-- PostgreSQL dialect of the SQLite migration with the same number: the
-- search index (store.Searcher) and the rows of cross-session reads.
--
-- search_docs holds one row per searchable item (a conversation message,
-- an agent event, a trace event, an artifact, a run) with the item's text,
-- written by the row triggers below in the statement that writes the
-- content, whatever the path (appends, saves, trims, deletes, cascades,
-- retention, rewinds, imports). The text of each kind is the one the
-- SQLite migration documents.
--
-- The index is a GIN index over the item's trigrams (lower-cased
-- three-character substrings, sessionstore_trigrams), built without an
-- extension, so that a term matches wherever it occurs as a substring, in
-- any script (CJK text has no spaces between words: a tsvector of words
-- would hold a whole CJK sentence as one word). Candidates the index finds
-- are checked with strpos() on the text; terms shorter than three
-- characters are found with strpos() alone (see store.SearchQuery).
-- Ranking is ts_rank over the 'simple' configuration's words.
--
-- The trigger functions resolve the store's tables through the search_path
-- of the session that writes, as the feed's do since migration 8 (a schema
-- may be renamed).

-- +goose Up
CREATE TABLE search_docs (
    doc        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT COLLATE "C" NOT NULL,
    session_pk BIGINT NOT NULL DEFAULT 0,
    owner      TEXT COLLATE "C" NOT NULL DEFAULT '',
    pos        BIGINT NOT NULL DEFAULT 0,
    ref        TEXT COLLATE "C" NOT NULL DEFAULT '',
    session_id TEXT COLLATE "C" NOT NULL,
    app        TEXT COLLATE "C" NOT NULL DEFAULT '',
    user_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    role       TEXT NOT NULL DEFAULT '',
    at_us      BIGINT NOT NULL,
    body       TEXT NOT NULL
);

CREATE UNIQUE INDEX search_docs_key ON search_docs (kind, session_pk, owner, pos, ref);
CREATE INDEX search_docs_user ON search_docs (app, user_id, at_us, doc);

-- +goose StatementBegin
CREATE FUNCTION sessionstore_trigrams(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT substr(l, i, 3)), '{}')
    FROM (SELECT lower(t) AS l) AS x, generate_series(1, length(x.l) - 2) AS i
$$;
-- +goose StatementEnd

CREATE INDEX search_docs_trigrams ON search_docs USING gin (sessionstore_trigrams(body));

-- The text of a message's content (a JSON array of blocks); '' when it is
-- not one.
-- +goose StatementBegin
CREATE FUNCTION sessionstore_message_text(content text) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    out text;
BEGIN
    SELECT string_agg(nullif(concat_ws(' ',
               b.v ->> 'text',
               b.v ->> 'name',
               CASE json_typeof(b.v -> 'input') WHEN 'string' THEN b.v ->> 'input' ELSE (b.v -> 'input')::text END,
               CASE json_typeof(b.v -> 'content')
                   WHEN 'string' THEN b.v ->> 'content'
                   WHEN 'array' THEN (SELECT string_agg(c.v ->> 'text', ' ' ORDER BY c.n)
                                      FROM json_array_elements(b.v -> 'content') WITH ORDINALITY AS c (v, n)
                                      WHERE json_typeof(c.v) = 'object')
               END), ''), ' ' ORDER BY b.n)
    INTO out
    FROM json_array_elements(CASE WHEN json_typeof(content::json) = 'array' THEN content::json ELSE '[]'::json END)
         WITH ORDINALITY AS b (v, n)
    WHERE json_typeof(b.v) = 'object';
    RETURN coalesce(out, '');
EXCEPTION WHEN others THEN
    RETURN '';
END
$$;
-- +goose StatementEnd

-- The text of an agent event (ADK's JSON): content.parts' text,
-- functionCall name and args, functionResponse name.
-- +goose StatementBegin
CREATE FUNCTION sessionstore_event_text(data text) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    out text;
    parts json;
BEGIN
    parts := CASE WHEN json_typeof(data::json) = 'object' THEN data::json -> 'content' -> 'parts' END;
    IF parts IS NULL OR json_typeof(parts) <> 'array' THEN
        RETURN '';
    END IF;
    SELECT string_agg(nullif(concat_ws(' ',
               p.v ->> 'text',
               p.v -> 'functionCall' ->> 'name',
               CASE json_typeof(p.v -> 'functionCall' -> 'args') WHEN 'string' THEN p.v -> 'functionCall' ->> 'args'
                   ELSE (p.v -> 'functionCall' -> 'args')::text END,
               p.v -> 'functionResponse' ->> 'name'), ''), ' ' ORDER BY p.n)
    INTO out
    FROM json_array_elements(parts) WITH ORDINALITY AS p (v, n)
    WHERE json_typeof(p.v) = 'object';
    RETURN coalesce(out, '');
EXCEPTION WHEN others THEN
    RETURN '';
END
$$;
-- +goose StatementEnd

-- The author of an agent event, else its content's role, else ''.
-- +goose StatementBegin
CREATE FUNCTION sessionstore_event_role(data text) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF json_typeof(data::json) <> 'object' THEN
        RETURN '';
    END IF;
    RETURN coalesce(data::json ->> 'author', data::json -> 'content' ->> 'role', '');
EXCEPTION WHEN others THEN
    RETURN '';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION sessionstore_search_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
        VALUES ('message', NEW.session_id, NEW.seq, NEW.session_id, NEW.role, NEW.created_at_ms * 1000,
                sessionstore_message_text(NEW.content));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER search_messages_aid AFTER INSERT OR DELETE ON conversation_messages
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_messages();
CREATE TRIGGER search_messages_au AFTER UPDATE OF content, role ON conversation_messages
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_messages();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_search_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO search_docs (kind, session_pk, pos, session_id, app, user_id, role, at_us, body)
        SELECT 'event', NEW.session_pk, NEW.seq, s.session_id, s.app, s.user_id,
               sessionstore_event_role(NEW.data), NEW.ts_us, sessionstore_event_text(NEW.data)
        FROM agent_sessions AS s WHERE s.pk = NEW.session_pk;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER search_events_aid AFTER INSERT OR DELETE ON agent_events
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_events();
CREATE TRIGGER search_events_au AFTER UPDATE OF data, ts_us, seq, session_pk ON agent_events
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_events();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_search_traces() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER search_traces_aid AFTER INSERT OR DELETE ON conversation_trace_events
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_traces();
CREATE TRIGGER search_traces_au AFTER UPDATE OF kind, name ON conversation_trace_events
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_traces();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_search_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER search_artifacts_aid AFTER INSERT OR DELETE ON conversation_artifacts
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_artifacts();
CREATE TRIGGER search_artifacts_au AFTER UPDATE OF artifact_id, tool_name, updated_at_ms ON conversation_artifacts
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_artifacts();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_search_runs() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER search_runs_aid AFTER INSERT OR DELETE ON conversation_runs
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_runs();
CREATE TRIGGER search_runs_au AFTER UPDATE OF run_id, status ON conversation_runs
    FOR EACH ROW EXECUTE FUNCTION sessionstore_search_runs();

-- Index what is already stored.
UPDATE conversation_messages SET content = content;
UPDATE agent_events SET data = data;
UPDATE conversation_trace_events SET name = name;
UPDATE conversation_artifacts SET tool_name = tool_name;
UPDATE conversation_runs SET status = status;

-- +goose Down
DROP TRIGGER search_runs_au ON conversation_runs;
DROP TRIGGER search_runs_aid ON conversation_runs;
DROP FUNCTION sessionstore_search_runs();
DROP TRIGGER search_artifacts_au ON conversation_artifacts;
DROP TRIGGER search_artifacts_aid ON conversation_artifacts;
DROP FUNCTION sessionstore_search_artifacts();
DROP TRIGGER search_traces_au ON conversation_trace_events;
DROP TRIGGER search_traces_aid ON conversation_trace_events;
DROP FUNCTION sessionstore_search_traces();
DROP TRIGGER search_events_au ON agent_events;
DROP TRIGGER search_events_aid ON agent_events;
DROP FUNCTION sessionstore_search_events();
DROP TRIGGER search_messages_au ON conversation_messages;
DROP TRIGGER search_messages_aid ON conversation_messages;
DROP FUNCTION sessionstore_search_messages();
DROP FUNCTION sessionstore_event_role(text);
DROP FUNCTION sessionstore_event_text(text);
DROP FUNCTION sessionstore_message_text(text);
DROP TABLE search_docs;
DROP FUNCTION sessionstore_trigrams(text);
