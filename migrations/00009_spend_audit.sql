-- Spend limits, reservations and the audit trail (issue 18).
--
-- spend_limits holds the limits of governed sessions (session_id set) and
-- of agents across their sessions (session_id NULL), each with the
-- counters of its current window: spent (settled usage) and reserved
-- (what live reservations hold). Money is integer micro-units of the
-- limit's currency. A reservation lists the limits it is counted in, with
-- the window it was counted in (holds: a JSON array of [limit id, window
-- start ms]), so that settling or releasing it gives back exactly what it
-- took.
--
-- audit_events is one hash chain per agent: (agent_id, seq) from 1, each
-- event holding the hash of the agent's previous one (lower-case hex
-- SHA-256; 64 zeros before the first). audit_heads keeps the last seq and
-- hash of every chain, so that removing events from the end is found.
-- Every time is UTC unix milliseconds.

-- +goose Up
CREATE TABLE spend_limits (
    id              TEXT    NOT NULL PRIMARY KEY,
    agent_id        TEXT    NOT NULL,
    session_id      TEXT    REFERENCES governed_sessions (id) ON DELETE CASCADE,
    ord             INTEGER NOT NULL,
    metric          TEXT    NOT NULL CHECK (metric IN ('input_tokens', 'output_tokens', 'total_tokens', 'cost')),
    period          TEXT    NOT NULL CHECK (period IN ('lifetime', 'hour', 'day', 'month')),
    amount          INTEGER NOT NULL CHECK (amount >= 0),
    currency        TEXT    NOT NULL DEFAULT '',
    window_start_ms INTEGER NOT NULL DEFAULT 0,
    spent           INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
    reserved        INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0)
) STRICT;

-- The limits a decision reads: an agent's own, and a session's.
CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (agent_id, metric, period) WHERE session_id IS NULL;
CREATE UNIQUE INDEX spend_limits_session ON spend_limits (session_id, metric, period) WHERE session_id IS NOT NULL;

CREATE TABLE spend_reservations (
    session_id    TEXT    NOT NULL REFERENCES governed_sessions (id) ON DELETE CASCADE,
    request_id    TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('reserved', 'settled', 'released', 'expired', 'refused')),
    input_tokens  INTEGER NOT NULL CHECK (input_tokens >= 0),
    output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
    cost          INTEGER NOT NULL CHECK (cost >= 0),
    currency      TEXT    NOT NULL DEFAULT '',
    actual_input_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (actual_input_tokens >= 0),
    actual_output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (actual_output_tokens >= 0),
    actual_cost          INTEGER NOT NULL DEFAULT 0 CHECK (actual_cost >= 0),
    holds         TEXT    NOT NULL DEFAULT '[]',
    detail        TEXT    NOT NULL DEFAULT '{}',
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    closed_at_ms  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, request_id)
) STRICT, WITHOUT ROWID;

-- Live reservations by agent and expiry: the lapse sweep of a decision.
CREATE INDEX spend_reservations_live ON spend_reservations (agent_id, expires_at_ms) WHERE status = 'reserved';

CREATE TABLE audit_events (
    agent_id   TEXT    NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    at_ms      INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    outcome    TEXT    NOT NULL,
    session_id TEXT    NOT NULL DEFAULT '',
    request_id TEXT    NOT NULL DEFAULT '',
    detail     TEXT    NOT NULL DEFAULT '{}',
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    PRIMARY KEY (agent_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE audit_heads (
    agent_id  TEXT    NOT NULL PRIMARY KEY,
    seq       INTEGER NOT NULL CHECK (seq > 0),
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE audit_heads;
DROP TABLE audit_events;
DROP TABLE spend_reservations;
DROP TABLE spend_limits;
