-- The search index (store.Searcher): one row in search_docs per searchable
-- item (a conversation message, an agent event, a trace event, an
-- artifact, a run) with the item's text, and an FTS5 index over that text.
--
-- Both are derived from the content and written by the triggers below, in
-- the statement (so the transaction) that writes the content, whatever the
-- path: appends, saves, trims, deletes, cascades from a deleted
-- conversation or agent session, retention, rewinds, imports. Nothing in Go
-- writes them except the reindex (an UPDATE of the content column that
-- fires the update triggers).
--
-- Text of an item:
--   message   the text of text and reasoning blocks, tool names, tool
--             input JSON, tool result content (a string, or the text of
--             its blocks), in block order, separated by spaces
--   event     the ADK event's content.parts: text, functionCall name and
--             args JSON, functionResponse name
--   trace     its kind and name
--   artifact  its URI, artifact id and tool name
--   run       its run id
--
-- The tokenizer is FTS5's trigram tokenizer (case-insensitive): a term
-- matches wherever it occurs as a substring, in any script (CJK text has no
-- spaces between words, so word tokenizers cannot find a word inside it).
-- A term shorter than three characters has no trigram: the library finds
-- it with instr() on search_docs.body instead (see store.SearchQuery).
--
-- search_docs also serves cross-session reads (store.HistoryRequest): an
-- agent session's events carry the app and user, indexed by time.

-- +goose Up
CREATE TABLE search_docs (
    doc        INTEGER NOT NULL PRIMARY KEY,
    -- message, event, trace, artifact or run
    kind       TEXT    NOT NULL,
    -- events: the agent session's pk; others: 0
    session_pk INTEGER NOT NULL DEFAULT 0,
    -- conversation kinds: the conversation id; events: ''
    owner      TEXT    NOT NULL DEFAULT '',
    -- messages, traces, events: the seq; others: 0
    pos        INTEGER NOT NULL DEFAULT 0,
    -- artifacts: the URI; runs: the run id; others: ''
    ref        TEXT    NOT NULL DEFAULT '',
    -- the conversation id, or the agent session's session id
    session_id TEXT    NOT NULL,
    app        TEXT    NOT NULL DEFAULT '',
    user_id    TEXT    NOT NULL DEFAULT '',
    -- messages: the role; events: the author (else content.role)
    role       TEXT    NOT NULL DEFAULT '',
    at_us      INTEGER NOT NULL,
    body       TEXT    NOT NULL
) STRICT;

-- The item's key: the triggers find its row through it; also the window
-- of items around a hit (kind, session, pos range).
CREATE UNIQUE INDEX search_docs_key ON search_docs (kind, session_pk, owner, pos, ref);
-- Cross-session reads: a user's events newest first, and the app/user
-- filters of a search.
CREATE INDEX search_docs_user ON search_docs (app, user_id, at_us, doc);

CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content = 'search_docs', content_rowid = 'doc', tokenize = 'trigram'
);

-- search_fts follows search_docs (external content: the text is kept once).
-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN
    INSERT INTO search_fts (rowid, body) VALUES (NEW.doc, NEW.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', OLD.doc, OLD.body);
END;
-- +goose StatementEnd

-- Messages.
-- +goose StatementBegin
CREATE TRIGGER search_messages_ai AFTER INSERT ON conversation_messages BEGIN
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
CREATE TRIGGER search_messages_ad AFTER DELETE ON conversation_messages BEGIN
    DELETE FROM search_docs WHERE kind = 'message' AND session_pk = 0 AND owner = OLD.session_id AND pos = OLD.seq AND ref = '';
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_messages_au AFTER UPDATE OF content, role ON conversation_messages BEGIN
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

-- Agent events.
-- +goose StatementBegin
CREATE TRIGGER search_events_ai AFTER INSERT ON agent_events BEGIN
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
CREATE TRIGGER search_events_ad AFTER DELETE ON agent_events BEGIN
    DELETE FROM search_docs WHERE kind = 'event' AND session_pk = OLD.session_pk AND owner = '' AND pos = OLD.seq AND ref = '';
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_events_au AFTER UPDATE OF data, ts_us, seq, session_pk ON agent_events BEGIN
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

-- Index what is already stored (the same text as the triggers).
UPDATE conversation_messages SET content = content;
UPDATE agent_events SET data = data;
UPDATE conversation_trace_events SET name = name;
UPDATE conversation_artifacts SET tool_name = tool_name;
UPDATE conversation_runs SET status = status;

-- +goose Down
DROP TRIGGER search_runs_au;
DROP TRIGGER search_runs_ad;
DROP TRIGGER search_runs_ai;
DROP TRIGGER search_artifacts_au;
DROP TRIGGER search_artifacts_ad;
DROP TRIGGER search_artifacts_ai;
DROP TRIGGER search_traces_au;
DROP TRIGGER search_traces_ad;
DROP TRIGGER search_traces_ai;
DROP TRIGGER search_events_au;
DROP TRIGGER search_events_ad;
DROP TRIGGER search_events_ai;
DROP TRIGGER search_messages_au;
DROP TRIGGER search_messages_ad;
DROP TRIGGER search_messages_ai;
DROP TRIGGER search_docs_ad;
DROP TRIGGER search_docs_ai;
DROP TABLE search_fts;
DROP INDEX search_docs_user;
DROP INDEX search_docs_key;
DROP TABLE search_docs;
