-- Runtime bookkeeping (zeroclaw): runtime sessions with their model
-- overrides and turn state, content-addressed uploads, and the recorded
-- causes of cancelled turns. Times are UTC unix milliseconds.

-- +goose Up
CREATE TABLE runtime_sessions (
    id              TEXT    NOT NULL PRIMARY KEY,
    agent_alias     TEXT    NOT NULL,
    workspace_dir   TEXT    NOT NULL,
    chat_mode       TEXT    NOT NULL,
    owner_id        TEXT,                          -- NULL: unowned
    model           TEXT,                          -- overrides; NULL: default
    model_provider  TEXT,
    temperature     REAL,
    created_at_ms   INTEGER NOT NULL,
    last_active_ms  INTEGER NOT NULL,
    -- The current (or last) turn. turn_gen comes from runtime_counters, so
    -- it increases strictly and is never reused, even after a remove.
    turn_gen        INTEGER NOT NULL DEFAULT 0 CHECK (turn_gen >= 0),
    turn_running    INTEGER NOT NULL DEFAULT 0 CHECK (turn_running IN (0, 1)),
    turn_owner      TEXT    NOT NULL DEFAULT '',   -- store instance that began it
    turn_started_ms INTEGER NOT NULL DEFAULT 0,
    -- Cause of a cancel recorded for the running turn ('' = none). Other
    -- processes poll it to cancel their local turn context.
    turn_cancel     TEXT    NOT NULL DEFAULT ''
        CHECK (turn_cancel IN ('', 'client_rpc', 'admin_kill', 'session_removed'))
) STRICT;

-- CountByAgent.
CREATE INDEX runtime_sessions_agent ON runtime_sessions (agent_alias);
-- EvictSameModeSiblings.
CREATE INDEX runtime_sessions_owner_mode ON runtime_sessions (owner_id, chat_mode, turn_running);

-- One row: the session count (kept by triggers, so the global cap and Count
-- are O(1)) and the last turn generation handed out.
CREATE TABLE runtime_counters (
    id            INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    sessions      INTEGER NOT NULL DEFAULT 0 CHECK (sessions >= 0),
    last_turn_gen INTEGER NOT NULL DEFAULT 0 CHECK (last_turn_gen >= 0)
) STRICT;
INSERT INTO runtime_counters (id) VALUES (1);

-- +goose StatementBegin
CREATE TRIGGER runtime_sessions_count_insert AFTER INSERT ON runtime_sessions
BEGIN
    UPDATE runtime_counters SET sessions = sessions + 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER runtime_sessions_count_delete AFTER DELETE ON runtime_sessions
BEGIN
    UPDATE runtime_counters SET sessions = sessions - 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- Causes of cancelled turns, keyed by turn. No foreign key: the cause of a
-- Kill or Remove outlives the session until it is taken or the turn ended.
CREATE TABLE runtime_cancel_causes (
    session_id     TEXT    NOT NULL,
    generation     INTEGER NOT NULL CHECK (generation > 0),
    cause          TEXT    NOT NULL
        CHECK (cause IN ('client_rpc', 'admin_kill', 'session_removed', 'superseded')),
    taken          INTEGER NOT NULL DEFAULT 0 CHECK (taken IN (0, 1)),
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, generation)
) STRICT, WITHOUT ROWID;

-- Upload content, stored once per SHA-256 digest.
CREATE TABLE upload_blobs (
    sha256     BLOB    NOT NULL PRIMARY KEY CHECK (length(sha256) = 32),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    content    BLOB    NOT NULL CHECK (length(content) = size_bytes)
) STRICT;

-- The upload index of each runtime session.
CREATE TABLE uploads (
    session_id     TEXT    NOT NULL REFERENCES runtime_sessions (id) ON DELETE CASCADE,
    ref_id         TEXT    NOT NULL,
    marker         TEXT    NOT NULL,
    workspace_path TEXT    NOT NULL,
    sha256         BLOB    NOT NULL REFERENCES upload_blobs (sha256),
    size_bytes     INTEGER NOT NULL CHECK (size_bytes >= 0),
    created_at_ms  INTEGER NOT NULL,
    PRIMARY KEY (session_id, ref_id)
) STRICT, WITHOUT ROWID;

-- Reference checks of the blob collector (and of the foreign key).
CREATE INDEX uploads_sha256 ON uploads (sha256);

-- Content no entry refers to any more is deleted with its last entry,
-- whether the entry is deleted (also by the cascade from runtime_sessions)
-- or overwritten with other content.
-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_delete AFTER DELETE ON uploads
WHEN NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_update AFTER UPDATE OF sha256 ON uploads
WHEN OLD.sha256 <> NEW.sha256 AND NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE uploads;
DROP TABLE upload_blobs;
DROP TABLE runtime_cancel_causes;
DROP TABLE runtime_counters;
DROP TABLE runtime_sessions;
