-- Governed task sessions (arbiter), PostgreSQL dialect of the SQLite
-- migration with the same number. Times are UTC unix milliseconds (BIGINT).
-- Ids use the "C" collation so that ordering and paging compare bytes, as
-- SQLite's BINARY collation does.

-- +goose Up
CREATE TABLE governed_sessions (
    id                     TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    agent_id               TEXT COLLATE "C" NOT NULL,
    delegation_chain       TEXT[]  NOT NULL DEFAULT '{}',
    declared_intent        TEXT    NOT NULL DEFAULT '',
    authorized_tools       TEXT[]  NOT NULL DEFAULT '{}',
    any_tool               BOOLEAN NOT NULL DEFAULT false,
    authorized_credentials TEXT[]  NOT NULL DEFAULT '{}',
    time_limit_ms          BIGINT  NOT NULL CHECK (time_limit_ms >= 1000),
    call_budget            BIGINT  NOT NULL CHECK (call_budget >= 0),
    calls_made             BIGINT  NOT NULL DEFAULT 0 CHECK (calls_made >= 0 AND calls_made <= call_budget),
    rate_limit             BIGINT  NOT NULL DEFAULT 0 CHECK (rate_limit >= 0),
    rate_window_ms         BIGINT  NOT NULL CHECK (rate_window_ms > 0),
    rate_window_start_ms   BIGINT  NOT NULL,
    rate_window_calls      BIGINT  NOT NULL DEFAULT 0 CHECK (rate_window_calls >= 0),
    sensitivity            TEXT    NOT NULL,
    status                 TEXT    NOT NULL CHECK (status IN ('active', 'closed', 'expired')),
    created_at_ms          BIGINT  NOT NULL,
    expires_at_ms          BIGINT  NOT NULL
);

-- Per-agent counts and listings (CountActive, the per-agent cap, List by agent).
CREATE INDEX governed_sessions_agent ON governed_sessions (agent_id, status, expires_at_ms);
-- Cleanup of closed and expired sessions.
CREATE INDEX governed_sessions_status ON governed_sessions (status, expires_at_ms);

-- Outcomes of Use calls that carried a request id: a retry returns the first
-- outcome and consumes nothing.
CREATE TABLE governed_use_requests (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES governed_sessions (id) ON DELETE CASCADE,
    request_id    TEXT COLLATE "C" NOT NULL,
    tools         TEXT[] NOT NULL,
    outcome       TEXT   NOT NULL,
    detail        TEXT   NOT NULL DEFAULT '{}',
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, request_id)
);

-- +goose Down
DROP TABLE governed_use_requests;
DROP TABLE governed_sessions;
