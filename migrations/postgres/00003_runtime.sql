-- Runtime bookkeeping (zeroclaw), PostgreSQL dialect of the SQLite
-- migration with the same number: runtime sessions with their model
-- overrides and turn state, content-addressed uploads, and the recorded
-- causes of cancelled turns. Times are UTC unix milliseconds (BIGINT); keys
-- that lists are ordered by use the "C" (byte-order) collation.

-- +goose Up
CREATE TABLE runtime_sessions (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    agent_alias     TEXT COLLATE "C" NOT NULL,
    workspace_dir   TEXT    NOT NULL,
    chat_mode       TEXT    NOT NULL,
    owner_id        TEXT COLLATE "C",              -- NULL: unowned
    model           TEXT,                          -- overrides; NULL: default
    model_provider  TEXT,
    temperature     DOUBLE PRECISION,
    created_at_ms   BIGINT  NOT NULL,
    last_active_ms  BIGINT  NOT NULL,
    -- The current (or last) turn. turn_gen comes from runtime_counters, so
    -- it increases strictly and is never reused, even after a remove.
    turn_gen        BIGINT  NOT NULL DEFAULT 0 CHECK (turn_gen >= 0),
    turn_running    BOOLEAN NOT NULL DEFAULT false,
    turn_owner      TEXT    NOT NULL DEFAULT '',   -- store instance that began it
    turn_started_ms BIGINT  NOT NULL DEFAULT 0,
    -- Cause of a cancel recorded for the running turn ('' = none). Other
    -- processes are told by NOTIFY and poll it to cancel their local turn.
    turn_cancel     TEXT    NOT NULL DEFAULT ''
        CHECK (turn_cancel IN ('', 'client_rpc', 'admin_kill', 'session_removed'))
);

-- CountByAgent.
CREATE INDEX runtime_sessions_agent ON runtime_sessions (agent_alias);
-- EvictSameModeSiblings.
CREATE INDEX runtime_sessions_owner_mode ON runtime_sessions (owner_id, chat_mode, turn_running);

-- One row: the session count (kept by triggers, so the global cap and Count
-- are O(1)) and the last turn generation handed out.
CREATE TABLE runtime_counters (
    id            BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
    sessions      BIGINT NOT NULL DEFAULT 0 CHECK (sessions >= 0),
    last_turn_gen BIGINT NOT NULL DEFAULT 0 CHECK (last_turn_gen >= 0)
);
INSERT INTO runtime_counters (id) VALUES (1);

-- +goose StatementBegin
CREATE FUNCTION runtime_sessions_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE runtime_counters SET sessions = sessions + 1 WHERE id = 1;
    ELSE
        UPDATE runtime_counters SET sessions = sessions - 1 WHERE id = 1;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER runtime_sessions_count AFTER INSERT OR DELETE ON runtime_sessions
    FOR EACH ROW EXECUTE FUNCTION runtime_sessions_count();

-- Causes of cancelled turns, keyed by turn. No foreign key: the cause of a
-- Kill or Remove outlives the session until it is taken or the turn ended.
CREATE TABLE runtime_cancel_causes (
    session_id     TEXT COLLATE "C" NOT NULL,
    generation     BIGINT  NOT NULL CHECK (generation > 0),
    cause          TEXT    NOT NULL
        CHECK (cause IN ('client_rpc', 'admin_kill', 'session_removed', 'superseded')),
    taken          BOOLEAN NOT NULL DEFAULT false,
    recorded_at_ms BIGINT  NOT NULL,
    PRIMARY KEY (session_id, generation)
);

-- Upload content, stored once per SHA-256 digest.
CREATE TABLE upload_blobs (
    sha256     BYTEA  NOT NULL PRIMARY KEY CHECK (length(sha256) = 32),
    size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
    content    BYTEA  NOT NULL CHECK (length(content) = size_bytes)
);

-- The upload index of each runtime session.
CREATE TABLE uploads (
    session_id     TEXT COLLATE "C" NOT NULL REFERENCES runtime_sessions (id) ON DELETE CASCADE,
    ref_id         TEXT COLLATE "C" NOT NULL,
    marker         TEXT   NOT NULL,
    workspace_path TEXT   NOT NULL,
    sha256         BYTEA  NOT NULL REFERENCES upload_blobs (sha256),
    size_bytes     BIGINT NOT NULL CHECK (size_bytes >= 0),
    created_at_ms  BIGINT NOT NULL,
    PRIMARY KEY (session_id, ref_id)
);

-- Reference checks of the blob collector (and of the foreign key).
CREATE INDEX uploads_sha256 ON uploads (sha256);

-- Content no entry refers to any more is deleted with its last entry,
-- whether the entry is deleted (also by the cascade from runtime_sessions)
-- or overwritten with other content. Writers of one digest serialize on a
-- transaction advisory lock (keys 0x424C4F42 "BLOB" and the digest's hash;
-- the store takes it before adding a reference), so that the check below
-- sees every committed reference and no reference is added meanwhile.
-- +goose StatementBegin
CREATE FUNCTION uploads_blob_gc() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.sha256 = NEW.sha256 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(1112297282, hashtext(encode(OLD.sha256, 'hex')));
    IF NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256) THEN
        DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER uploads_blob_gc AFTER DELETE OR UPDATE OF sha256 ON uploads
    FOR EACH ROW EXECUTE FUNCTION uploads_blob_gc();

-- +goose Down
DROP TABLE uploads;
DROP FUNCTION uploads_blob_gc();
DROP TABLE upload_blobs;
DROP TABLE runtime_cancel_causes;
DROP TABLE runtime_counters;
DROP TABLE runtime_sessions;
DROP FUNCTION runtime_sessions_count();
