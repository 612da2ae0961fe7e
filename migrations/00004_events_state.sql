-- Agent sessions (Google's ADK, trpc-agent-go): sessions keyed by
-- (app, user, session id), an append-only event log per session, and
-- key-value state in app, user and session scopes. Times are UTC unix
-- milliseconds. Event payloads and state values are JSON text.

-- +goose Up
CREATE TABLE agent_sessions (
    pk            INTEGER NOT NULL PRIMARY KEY,
    app           TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    version       INTEGER NOT NULL CHECK (version >= 1),
    event_count   INTEGER NOT NULL DEFAULT 0 CHECK (event_count >= 0),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;

-- Lookup by key, and listing by app or by (app, user) in key order.
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id);

-- The event log. seq is the gapless position within the session.
CREATE TABLE agent_events (
    id            INTEGER NOT NULL PRIMARY KEY,
    session_pk    INTEGER NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    event_id      TEXT    NOT NULL,
    invocation_id TEXT    NOT NULL DEFAULT '',
    ts_ms         INTEGER NOT NULL,
    data          TEXT    NOT NULL
) STRICT;

-- Recent events and paging in log order (also serves the cascade delete).
CREATE UNIQUE INDEX agent_events_seq ON agent_events (session_pk, seq);
-- Event ids are unique per session (idempotent appends).
CREATE UNIQUE INDEX agent_events_id ON agent_events (session_pk, event_id);
-- Time-window reads ("events after T").
CREATE INDEX agent_events_ts ON agent_events (session_pk, ts_ms);
-- The events of one invocation.
CREATE INDEX agent_events_invocation ON agent_events (session_pk, invocation_id, seq);

-- State shared by every user and session of an application.
CREATE TABLE agent_app_state (
    app   TEXT NOT NULL,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (app, key)
) STRICT, WITHOUT ROWID;

-- State shared by every session of one user of an application.
CREATE TABLE agent_user_state (
    app     TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (app, user_id, key)
) STRICT, WITHOUT ROWID;

-- State of one session, deleted with it.
CREATE TABLE agent_session_state (
    session_pk INTEGER NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    PRIMARY KEY (session_pk, key)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE agent_session_state;
DROP TABLE agent_user_state;
DROP TABLE agent_app_state;
DROP TABLE agent_events;
DROP TABLE agent_sessions;
