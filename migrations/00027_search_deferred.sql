-- The search index is no longer written in the content's transaction.
--
-- Before, the triggers of migrations 14 and 16 wrote an item's search_docs
-- row (and its FTS5 trigrams) in the statement that wrote the content: on
-- a 1 KiB agent event that made an append 1.8-2.6x dearer and the file
-- 2.4x larger. Now the content's triggers only queue the item's key in
-- search_pending (a small row on the table's last page), in the same
-- transaction as the content; the store folds the queue into search_docs
-- and search_fts later, in batches, each batch in one transaction that
-- rebuilds the documents of its keys from the content as it is then and
-- deletes exactly the queue rows it read (internal/sqlcore/search_fold.go).
--
-- So the queue is the position up to which content is indexed, stored
-- transactionally: a key is queued by every insert, update and delete of
-- its content (an update queues the old key and, when it moved, the new
-- one), a document is rebuilt from the content (never from the queue), and
-- a batch's queue rows go in the batch's own transaction, so nothing is
-- indexed twice (a key has one document) nor skipped (a queue row only
-- goes in the transaction that rebuilt its key). A search folds the queue
-- first, so it stays exact.
--
-- Sealed (encrypted) messages and events are not queued: their documents
-- are written by the write path when the store opts in (search_sealed.go),
-- as before. A deleted sealed row is queued, and its document goes with
-- the fold.
--
-- search_state.enabled = 0 turns the index off for the whole file (the
-- store option WithSearchIndex(false)): nothing is queued, and the index is
-- empty.

-- +goose Up
CREATE TABLE search_pending (
    id         INTEGER NOT NULL PRIMARY KEY,
    kind       TEXT    NOT NULL,
    session_pk INTEGER NOT NULL DEFAULT 0,
    owner      TEXT    NOT NULL DEFAULT '',
    pos        INTEGER NOT NULL DEFAULT 0,
    ref        TEXT    NOT NULL DEFAULT '',
    -- PostgreSQL's row-level security reads it; '' here.
    tenant     TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE TABLE search_state (
    one     INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    enabled INTEGER NOT NULL
) STRICT;
INSERT INTO search_state (one, enabled) VALUES (1, 1);

DROP TRIGGER search_messages_ai;
DROP TRIGGER search_messages_ad;
DROP TRIGGER search_messages_au;
DROP TRIGGER search_events_ai;
DROP TRIGGER search_events_ad;
DROP TRIGGER search_events_au;
DROP TRIGGER search_traces_ai;
DROP TRIGGER search_traces_ad;
DROP TRIGGER search_traces_au;
DROP TRIGGER search_artifacts_ai;
DROP TRIGGER search_artifacts_ad;
DROP TRIGGER search_artifacts_au;
DROP TRIGGER search_runs_ai;
DROP TRIGGER search_runs_ad;
DROP TRIGGER search_runs_au;
-- +goose StatementBegin
CREATE TRIGGER search_queue_messages_ai AFTER INSERT ON conversation_messages
    WHEN substr(NEW.content, 1, 7) <> 'ssenc1:' AND (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('message', 0, NEW.session_id, NEW.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_messages_ad AFTER DELETE ON conversation_messages
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('message', 0, OLD.session_id, OLD.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_messages_au AFTER UPDATE OF content, role ON conversation_messages
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('message', 0, OLD.session_id, OLD.seq, '');
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) SELECT 'message', 0, NEW.session_id, NEW.seq, '' WHERE NEW.session_id IS NOT OLD.session_id OR NEW.seq IS NOT OLD.seq;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_events_ai AFTER INSERT ON agent_events
    WHEN substr(NEW.data, 1, 7) <> 'ssenc1:' AND (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('event', NEW.session_pk, '', NEW.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_events_ad AFTER DELETE ON agent_events
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('event', OLD.session_pk, '', OLD.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_events_au AFTER UPDATE OF data, ts_us, seq, session_pk ON agent_events
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('event', OLD.session_pk, '', OLD.seq, '');
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) SELECT 'event', NEW.session_pk, '', NEW.seq, '' WHERE NEW.session_pk IS NOT OLD.session_pk OR NEW.seq IS NOT OLD.seq;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_traces_ai AFTER INSERT ON conversation_trace_events
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('trace', 0, NEW.session_id, NEW.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_traces_ad AFTER DELETE ON conversation_trace_events
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('trace', 0, OLD.session_id, OLD.seq, '');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_traces_au AFTER UPDATE OF kind, name ON conversation_trace_events
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('trace', 0, OLD.session_id, OLD.seq, '');
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) SELECT 'trace', 0, NEW.session_id, NEW.seq, '' WHERE NEW.session_id IS NOT OLD.session_id OR NEW.seq IS NOT OLD.seq;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_artifacts_ai AFTER INSERT ON conversation_artifacts
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('artifact', 0, NEW.session_id, 0, NEW.uri);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_artifacts_ad AFTER DELETE ON conversation_artifacts
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('artifact', 0, OLD.session_id, 0, OLD.uri);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_artifacts_au AFTER UPDATE OF artifact_id, tool_name, updated_at_ms ON conversation_artifacts
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('artifact', 0, OLD.session_id, 0, OLD.uri);
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) SELECT 'artifact', 0, NEW.session_id, 0, NEW.uri WHERE NEW.session_id IS NOT OLD.session_id OR NEW.uri IS NOT OLD.uri;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_runs_ai AFTER INSERT ON conversation_runs
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('run', 0, NEW.session_id, 0, NEW.run_id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_runs_ad AFTER DELETE ON conversation_runs
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('run', 0, OLD.session_id, 0, OLD.run_id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_queue_runs_au AFTER UPDATE OF run_id, status ON conversation_runs
    WHEN (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('run', 0, OLD.session_id, 0, OLD.run_id);
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) SELECT 'run', 0, NEW.session_id, 0, NEW.run_id WHERE NEW.session_id IS NOT OLD.session_id OR NEW.run_id IS NOT OLD.run_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER search_queue_messages_ai;
DROP TRIGGER search_queue_messages_ad;
DROP TRIGGER search_queue_messages_au;
DROP TRIGGER search_queue_events_ai;
DROP TRIGGER search_queue_events_ad;
DROP TRIGGER search_queue_events_au;
DROP TRIGGER search_queue_traces_ai;
DROP TRIGGER search_queue_traces_ad;
DROP TRIGGER search_queue_traces_au;
DROP TRIGGER search_queue_artifacts_ai;
DROP TRIGGER search_queue_artifacts_ad;
DROP TRIGGER search_queue_artifacts_au;
DROP TRIGGER search_queue_runs_ai;
DROP TRIGGER search_queue_runs_ad;
DROP TRIGGER search_queue_runs_au;

-- +goose StatementBegin
CREATE TRIGGER search_messages_ai AFTER INSERT ON conversation_messages
    WHEN substr(NEW.content, 1, 7) <> 'ssenc1:' BEGIN
    INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
    VALUES ('message', NEW.session_id, NEW.seq, NEW.session_id, NEW.role, NEW.created_at_ms * 1000,
        coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(b.value, '$.text'),
                    json_extract(b.value, '$.name'),
                    json_extract(b.value, '$.input'),
                    CASE json_type(b.value, '$.content')
                        WHEN 'text' THEN json_extract(b.value, '$.content')
                        WHEN 'array' THEN (SELECT group_concat(json_extract(c.value, '$.text'), ' ')
                                           FROM json_each(b.value, '$.content') AS c WHERE c.type = 'object')
                    END), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END) AS b
                  WHERE b.type = 'object'), ''));
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_messages_au AFTER UPDATE OF content, role ON conversation_messages
    WHEN substr(NEW.content, 1, 7) <> 'ssenc1:' BEGIN
    DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
    VALUES ('message', NEW.session_id, NEW.seq, NEW.session_id, NEW.role, NEW.created_at_ms * 1000,
        coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(b.value, '$.text'),
                    json_extract(b.value, '$.name'),
                    json_extract(b.value, '$.input'),
                    CASE json_type(b.value, '$.content')
                        WHEN 'text' THEN json_extract(b.value, '$.content')
                        WHEN 'array' THEN (SELECT group_concat(json_extract(c.value, '$.text'), ' ')
                                           FROM json_each(b.value, '$.content') AS c WHERE c.type = 'object')
                    END), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END) AS b
                  WHERE b.type = 'object'), ''));
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_events_ai AFTER INSERT ON agent_events
    WHEN substr(NEW.data, 1, 7) <> 'ssenc1:' BEGIN
    INSERT INTO search_docs (kind, session_pk, pos, session_id, app, user_id, role, at_us, body)
    SELECT 'event', NEW.session_pk, NEW.seq, s.session_id, s.app, s.user_id,
        CASE WHEN json_valid(NEW.data) THEN coalesce(json_extract(NEW.data, '$.author'), json_extract(NEW.data, '$.content.role'), '') ELSE '' END,
        NEW.ts_us,
        coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(p.value, '$.text'),
                    json_extract(p.value, '$.functionCall.name'),
                    json_extract(p.value, '$.functionCall.args'),
                    json_extract(p.value, '$.functionResponse.name')), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(NEW.data) THEN NEW.data ELSE '{}' END, '$.content.parts') AS p
                  WHERE p.type = 'object'), '')
    FROM agent_sessions AS s WHERE s.pk = NEW.session_pk;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_events_au AFTER UPDATE OF data, ts_us, seq, session_pk ON agent_events
    WHEN substr(NEW.data, 1, 7) <> 'ssenc1:' BEGIN
    DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
    INSERT INTO search_docs (kind, session_pk, pos, session_id, app, user_id, role, at_us, body)
    SELECT 'event', NEW.session_pk, NEW.seq, s.session_id, s.app, s.user_id,
        CASE WHEN json_valid(NEW.data) THEN coalesce(json_extract(NEW.data, '$.author'), json_extract(NEW.data, '$.content.role'), '') ELSE '' END,
        NEW.ts_us,
        coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(p.value, '$.text'),
                    json_extract(p.value, '$.functionCall.name'),
                    json_extract(p.value, '$.functionCall.args'),
                    json_extract(p.value, '$.functionResponse.name')), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(NEW.data) THEN NEW.data ELSE '{}' END, '$.content.parts') AS p
                  WHERE p.type = 'object'), '')
    FROM agent_sessions AS s WHERE s.pk = NEW.session_pk;
END;
-- +goose StatementEnd

-- Trace events: kind and name.
-- +goose StatementBegin
CREATE TRIGGER search_traces_ai AFTER INSERT ON conversation_trace_events BEGIN
    INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
    VALUES ('trace', NEW.session_id, NEW.seq, NEW.session_id, NEW.kind, NEW.created_at_ms * 1000, concat_ws(' ', NEW.kind, NEW.name));
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_traces_ad AFTER DELETE ON conversation_trace_events BEGIN
    DELETE FROM search_docs WHERE kind = 'trace' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_traces_au AFTER UPDATE OF kind, name ON conversation_trace_events BEGIN
    DELETE FROM search_docs WHERE kind = 'trace' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
    INSERT INTO search_docs (kind, owner, pos, session_id, role, at_us, body)
    VALUES ('trace', NEW.session_id, NEW.seq, NEW.session_id, NEW.kind, NEW.created_at_ms * 1000, concat_ws(' ', NEW.kind, NEW.name));
END;
-- +goose StatementEnd

-- Artifacts: URI, artifact id and tool name.
-- +goose StatementBegin
CREATE TRIGGER search_artifacts_ai AFTER INSERT ON conversation_artifacts BEGIN
    INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
    VALUES ('artifact', NEW.session_id, NEW.uri, NEW.session_id, NEW.tool_name, NEW.updated_at_ms * 1000,
        concat_ws(' ', NEW.uri, NEW.artifact_id, NEW.tool_name));
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_artifacts_ad AFTER DELETE ON conversation_artifacts BEGIN
    DELETE FROM search_docs WHERE kind = 'artifact' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.uri;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_artifacts_au AFTER UPDATE OF artifact_id, tool_name, updated_at_ms ON conversation_artifacts BEGIN
    DELETE FROM search_docs WHERE kind = 'artifact' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.uri;
    INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
    VALUES ('artifact', NEW.session_id, NEW.uri, NEW.session_id, NEW.tool_name, NEW.updated_at_ms * 1000,
        concat_ws(' ', NEW.uri, NEW.artifact_id, NEW.tool_name));
END;
-- +goose StatementEnd

-- Runs: the run id.
-- +goose StatementBegin
CREATE TRIGGER search_runs_ai AFTER INSERT ON conversation_runs BEGIN
    INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
    VALUES ('run', NEW.session_id, NEW.run_id, NEW.session_id, NEW.status, NEW.created_at_ms * 1000, NEW.run_id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_runs_ad AFTER DELETE ON conversation_runs BEGIN
    DELETE FROM search_docs WHERE kind = 'run' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.run_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_runs_au AFTER UPDATE OF run_id, status ON conversation_runs BEGIN
    DELETE FROM search_docs WHERE kind = 'run' AND session_pk = 0 AND owner = OLD.session_id AND pos = 0 AND ref = OLD.run_id;
    INSERT INTO search_docs (kind, owner, ref, session_id, role, at_us, body)
    VALUES ('run', NEW.session_id, NEW.run_id, NEW.session_id, NEW.status, NEW.created_at_ms * 1000, NEW.run_id);
END;
-- +goose StatementEnd


-- +goose StatementBegin
CREATE TRIGGER search_messages_ad AFTER DELETE ON conversation_messages BEGIN
    DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_events_ad AFTER DELETE ON agent_events BEGIN
    DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
END;
-- +goose StatementEnd
-- The queued keys' documents are rebuilt by the old triggers: those whose
-- content is gone are deleted, the others written again.
DELETE FROM search_docs WHERE doc IN (SELECT d.doc FROM search_docs AS d JOIN search_pending AS p
    ON p.kind = d.kind AND p.session_pk = d.session_pk AND p.owner = d.owner AND p.pos = d.pos AND p.ref = d.ref);
UPDATE conversation_messages SET content = content WHERE EXISTS (SELECT 1 FROM search_pending AS p
    WHERE p.kind = 'message' AND p.owner = conversation_messages.session_id AND p.pos = conversation_messages.seq);
UPDATE agent_events SET data = data WHERE EXISTS (SELECT 1 FROM search_pending AS p
    WHERE p.kind = 'event' AND p.session_pk = agent_events.session_pk AND p.pos = agent_events.seq);
UPDATE conversation_trace_events SET name = name WHERE EXISTS (SELECT 1 FROM search_pending AS p
    WHERE p.kind = 'trace' AND p.owner = conversation_trace_events.session_id AND p.pos = conversation_trace_events.seq);
UPDATE conversation_artifacts SET tool_name = tool_name WHERE EXISTS (SELECT 1 FROM search_pending AS p
    WHERE p.kind = 'artifact' AND p.owner = conversation_artifacts.session_id AND p.ref = conversation_artifacts.uri);
UPDATE conversation_runs SET status = status WHERE EXISTS (SELECT 1 FROM search_pending AS p
    WHERE p.kind = 'run' AND p.owner = conversation_runs.session_id AND p.ref = conversation_runs.run_id);
DROP TABLE search_state;
DROP TABLE search_pending;
