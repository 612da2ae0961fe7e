-- Agent sessions (Google's ADK, trpc-agent-go), PostgreSQL dialect of the
-- SQLite migration with the same number: sessions keyed by (app, user,
-- session id), an append-only event log per session, and key-value state in
-- app, user and session scopes. Times are UTC unix milliseconds (BIGINT);
-- keys that lists are ordered or paged by use the "C" (byte-order)
-- collation. Event payloads and state values are JSON text.

-- +goose Up
CREATE TABLE agent_sessions (
    pk            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app           TEXT COLLATE "C" NOT NULL,
    user_id       TEXT COLLATE "C" NOT NULL,
    session_id    TEXT COLLATE "C" NOT NULL,
    version       BIGINT NOT NULL CHECK (version >= 1),
    event_count   BIGINT NOT NULL DEFAULT 0 CHECK (event_count >= 0),
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

-- Lookup by key, and listing by app or by (app, user) in key order.
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id);

-- The event log. seq is the gapless position within the session.
CREATE TABLE agent_events (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_pk    BIGINT NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    seq           BIGINT NOT NULL CHECK (seq >= 1),
    event_id      TEXT   NOT NULL,
    invocation_id TEXT   NOT NULL DEFAULT '',
    ts_ms         BIGINT NOT NULL,
    data          TEXT   NOT NULL
);

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
);

-- State shared by every session of one user of an application.
CREATE TABLE agent_user_state (
    app     TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (app, user_id, key)
);

-- State of one session, deleted with it.
CREATE TABLE agent_session_state (
    session_pk BIGINT NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    key        TEXT   NOT NULL,
    value      TEXT   NOT NULL,
    PRIMARY KEY (session_pk, key)
);

-- +goose Down
DROP TABLE agent_session_state;
DROP TABLE agent_user_state;
DROP TABLE agent_app_state;
DROP TABLE agent_events;
DROP TABLE agent_sessions;
