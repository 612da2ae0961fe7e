-- Encryption at rest (store.KeyRing, package keys).
--
-- data_key names the data key of an encrypted session in the keyring
-- outside the database ('' = the session is not encrypted). It is a random
-- id, never derived from the session's id. Every row of an encrypted
-- session's content columns holds ciphertext: 'ssenc1:' followed by the
-- base64 of nonce and AES-256-GCM ciphertext; a reader refuses plaintext
-- there.
--
-- The search index does not index encrypted content: ciphertext is not
-- text, and the plaintext must not reach search_docs. The message and
-- event triggers of migration 14 are recreated with a WHEN that skips a
-- sealed value, so an encrypted session's messages and events have no
-- search_docs row (and so are not in search results nor in cross-session
-- history reads). Traces, artifacts and runs index only their metadata
-- (kind, name, URI, tool, run id), which stays plaintext.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN data_key TEXT NOT NULL DEFAULT '';

-- Data keys to shred: a deleted session row that named a data key queues
-- it here in the transaction that deletes the row (whatever the path:
-- delete, retention, pruning of a fork's retired parent). The store
-- drains the queue after such writes: a key that no row names any more
-- is shredded from the keyring, then its queue row goes. A crash in
-- between leaves the queue row, and the next drain shreds it.
CREATE TABLE key_shred_queue (
    key_id TEXT NOT NULL PRIMARY KEY
) STRICT, WITHOUT ROWID;
CREATE INDEX agent_sessions_data_key ON agent_sessions (data_key) WHERE data_key <> '';
CREATE INDEX conversations_data_key ON conversations (data_key) WHERE data_key <> '';
-- +goose StatementBegin
CREATE TRIGGER agent_sessions_key_shred AFTER DELETE ON agent_sessions WHEN OLD.data_key <> '' BEGIN
    INSERT OR IGNORE INTO key_shred_queue (key_id) VALUES (OLD.data_key);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER conversations_key_shred AFTER DELETE ON conversations WHEN OLD.data_key <> '' BEGIN
    INSERT OR IGNORE INTO key_shred_queue (key_id) VALUES (OLD.data_key);
END;
-- +goose StatementEnd

DROP TRIGGER search_messages_ai;
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

DROP TRIGGER search_messages_au;
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

DROP TRIGGER search_events_ai;
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

DROP TRIGGER search_events_au;
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

-- +goose Down
DROP TRIGGER conversations_key_shred;
DROP TRIGGER agent_sessions_key_shred;
DROP INDEX conversations_data_key;
DROP INDEX agent_sessions_data_key;
DROP TABLE key_shred_queue;
DROP TRIGGER search_messages_ai;
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

DROP TRIGGER search_messages_au;
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

DROP TRIGGER search_events_ai;
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

DROP TRIGGER search_events_au;
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
ALTER TABLE conversations DROP COLUMN data_key;
ALTER TABLE agent_sessions DROP COLUMN data_key;
