-- Retention (issue 25): policies stored in the database so that every
-- process, sessionctl and the console see the same ones; holds that keep
-- a session whatever the policy; the lease that lets one background
-- sweeper run at a time across processes; and the log of the sweeps.
--
-- The columns and indexes below let every statement of a sweep use an
-- index (sqlstore's TestSweepQueryPlans checks the plans):
--   governed_sessions.ended_at_ms: when Close or CloseAllForAgent closed
--     the session (0 for a session closed before this migration, or not
--     closed; an expired session ended at expires_at_ms);
--   conversations and agent_sessions .last_access_ms: the last read that
--     counted (only moved when the policy says that reads count; it never
--     moves updated_at_ms);
--   indexes on the times the policies compare.

-- +goose Up
CREATE TABLE retention_policies (
    kind          TEXT    NOT NULL PRIMARY KEY,
    max_age_ms    INTEGER NOT NULL DEFAULT 0 CHECK (max_age_ms >= 0),
    keep_last     INTEGER NOT NULL DEFAULT 0 CHECK (keep_last >= 0),
    max_bytes     INTEGER NOT NULL DEFAULT 0 CHECK (max_bytes >= 0),
    reads_count   INTEGER NOT NULL DEFAULT 0 CHECK (reads_count IN (0, 1)),
    updated_at_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE retention_holds (
    facet         TEXT    NOT NULL,
    app           TEXT    NOT NULL DEFAULT '',
    user_id       TEXT    NOT NULL DEFAULT '',
    id            TEXT    NOT NULL,
    reason        TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (facet, app, user_id, id)
) STRICT, WITHOUT ROWID;

CREATE TABLE sweep_lease (
    name          TEXT    NOT NULL PRIMARY KEY,
    holder        TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE sweep_log (
    id             INTEGER NOT NULL PRIMARY KEY,
    holder         TEXT    NOT NULL,
    started_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER NOT NULL,
    report         TEXT    NOT NULL,
    error          TEXT    NOT NULL DEFAULT ''
) STRICT;

ALTER TABLE governed_sessions ADD COLUMN ended_at_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN last_access_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN last_access_ms INTEGER NOT NULL DEFAULT 0;

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
