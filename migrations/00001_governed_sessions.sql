-- Governed task sessions (arbiter): budgets, allow-lists, rate and time limits.
-- Times are UTC unix milliseconds. Lists are JSON arrays of strings.

-- +goose Up
CREATE TABLE governed_sessions (
    id                     TEXT    NOT NULL PRIMARY KEY,
    agent_id               TEXT    NOT NULL,
    delegation_chain       TEXT    NOT NULL DEFAULT '[]',
    declared_intent        TEXT    NOT NULL DEFAULT '',
    authorized_tools       TEXT    NOT NULL DEFAULT '[]',
    any_tool               INTEGER NOT NULL DEFAULT 0 CHECK (any_tool IN (0, 1)),
    authorized_credentials TEXT    NOT NULL DEFAULT '[]',
    time_limit_ms          INTEGER NOT NULL CHECK (time_limit_ms >= 1000),
    call_budget            INTEGER NOT NULL CHECK (call_budget >= 0),
    calls_made             INTEGER NOT NULL DEFAULT 0 CHECK (calls_made >= 0 AND calls_made <= call_budget),
    rate_limit             INTEGER NOT NULL DEFAULT 0 CHECK (rate_limit >= 0),
    rate_window_ms         INTEGER NOT NULL CHECK (rate_window_ms > 0),
    rate_window_start_ms   INTEGER NOT NULL,
    rate_window_calls      INTEGER NOT NULL DEFAULT 0 CHECK (rate_window_calls >= 0),
    sensitivity            TEXT    NOT NULL,
    status                 TEXT    NOT NULL CHECK (status IN ('active', 'closed', 'expired')),
    created_at_ms          INTEGER NOT NULL,
    expires_at_ms          INTEGER NOT NULL
) STRICT;

-- Per-agent counts and listings (CountActive, the per-agent cap, List by agent).
CREATE INDEX governed_sessions_agent ON governed_sessions (agent_id, status, expires_at_ms);
-- Cleanup of closed and expired sessions.
CREATE INDEX governed_sessions_status ON governed_sessions (status, expires_at_ms);

-- Outcomes of Use calls that carried a request id: a retry returns the first
-- outcome and consumes nothing.
CREATE TABLE governed_use_requests (
    session_id    TEXT    NOT NULL REFERENCES governed_sessions (id) ON DELETE CASCADE,
    request_id    TEXT    NOT NULL,
    tools         TEXT    NOT NULL,
    outcome       TEXT    NOT NULL,
    detail        TEXT    NOT NULL DEFAULT '{}',
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, request_id)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE governed_use_requests;
DROP TABLE governed_sessions;
