-- Retention (issue 25), PostgreSQL dialect of the SQLite migration with
-- the same number (see there).

-- +goose Up
CREATE TABLE retention_policies (
    kind          TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
    max_age_ms    BIGINT  NOT NULL DEFAULT 0 CHECK (max_age_ms >= 0),
    keep_last     BIGINT  NOT NULL DEFAULT 0 CHECK (keep_last >= 0),
    max_bytes     BIGINT  NOT NULL DEFAULT 0 CHECK (max_bytes >= 0),
    reads_count   BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at_ms BIGINT  NOT NULL
);

CREATE TABLE retention_holds (
    facet         TEXT   COLLATE "C" NOT NULL,
    app           TEXT   COLLATE "C" NOT NULL DEFAULT '',
    user_id       TEXT   COLLATE "C" NOT NULL DEFAULT '',
    id            TEXT   COLLATE "C" NOT NULL,
    reason        TEXT   NOT NULL DEFAULT '',
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (facet, app, user_id, id)
);

CREATE TABLE sweep_lease (
    name          TEXT   COLLATE "C" NOT NULL PRIMARY KEY,
    holder        TEXT   NOT NULL,
    expires_at_ms BIGINT NOT NULL
);

CREATE TABLE sweep_log (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    holder         TEXT   NOT NULL,
    started_at_ms  BIGINT NOT NULL,
    finished_at_ms BIGINT NOT NULL,
    report         TEXT   NOT NULL,
    error          TEXT   NOT NULL DEFAULT ''
);

ALTER TABLE governed_sessions ADD COLUMN ended_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN last_access_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN last_access_ms BIGINT NOT NULL DEFAULT 0;

CREATE INDEX governed_sessions_ended ON governed_sessions (status, ended_at_ms, id);
CREATE INDEX governed_sessions_expiry ON governed_sessions (expires_at_ms, id);
CREATE INDEX agent_sessions_updated ON agent_sessions (updated_at_ms, pk);
CREATE INDEX runtime_sessions_idle ON runtime_sessions (last_active_ms, id);
CREATE INDEX spend_reservations_closed ON spend_reservations (closed_at_ms, session_id, request_id);

-- +goose Down
DROP INDEX spend_reservations_closed;
DROP INDEX runtime_sessions_idle;
DROP INDEX agent_sessions_updated;
DROP INDEX governed_sessions_expiry;
DROP INDEX governed_sessions_ended;
ALTER TABLE agent_sessions DROP COLUMN last_access_ms;
ALTER TABLE conversations DROP COLUMN last_access_ms;
ALTER TABLE governed_sessions DROP COLUMN ended_at_ms;
DROP TABLE sweep_log;
DROP TABLE sweep_lease;
DROP TABLE retention_holds;
DROP TABLE retention_policies;
