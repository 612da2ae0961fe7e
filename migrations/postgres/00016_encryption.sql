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
-- event trigger functions of migration 14 are replaced with ones that skips a
-- sealed value, so an encrypted session's messages and events have no
-- search_docs row (and so are not in search results nor in cross-session
-- history reads). Traces, artifacts and runs index only their metadata
-- (kind, name, URI, tool, run id), which stays plaintext.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN data_key TEXT NOT NULL DEFAULT '';

-- Data keys to shred (see the SQLite migration of the same version).
CREATE TABLE key_shred_queue (
    key_id TEXT NOT NULL PRIMARY KEY
);
CREATE INDEX agent_sessions_data_key ON agent_sessions (data_key) WHERE data_key <> '';
CREATE INDEX conversations_data_key ON conversations (data_key) WHERE data_key <> '';
-- +goose StatementBegin
CREATE FUNCTION sessionstore_key_shred() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO key_shred_queue (key_id) VALUES (OLD.data_key) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER agent_sessions_key_shred AFTER DELETE ON agent_sessions
    FOR EACH ROW WHEN (OLD.data_key <> '') EXECUTE FUNCTION sessionstore_key_shred();
CREATE TRIGGER conversations_key_shred AFTER DELETE ON conversations
    FOR EACH ROW WHEN (OLD.data_key <> '') EXECUTE FUNCTION sessionstore_key_shred();

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

-- +goose Down
DROP TRIGGER conversations_key_shred ON conversations;
DROP TRIGGER agent_sessions_key_shred ON agent_sessions;
DROP FUNCTION sessionstore_key_shred();
DROP INDEX conversations_data_key;
DROP INDEX agent_sessions_data_key;
DROP TABLE key_shred_queue;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_messages() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_search_events() RETURNS trigger LANGUAGE plpgsql AS $$
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
ALTER TABLE conversations DROP COLUMN data_key;
ALTER TABLE agent_sessions DROP COLUMN data_key;
