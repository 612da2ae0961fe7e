-- Spend limits, reservations and the audit trail (issue 18), PostgreSQL
-- dialect of the SQLite migration with the same number (see there). Ids
-- use the "C" collation so that ordering compares bytes, as SQLite does.

-- +goose Up
CREATE TABLE spend_limits (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    agent_id        TEXT COLLATE "C" NOT NULL,
    session_id      TEXT COLLATE "C" REFERENCES governed_sessions (id) ON DELETE CASCADE,
    ord             BIGINT NOT NULL,
    metric          TEXT   NOT NULL CHECK (metric IN ('input_tokens', 'output_tokens', 'total_tokens', 'cost')),
    period          TEXT   NOT NULL CHECK (period IN ('lifetime', 'hour', 'day', 'month')),
    amount          BIGINT NOT NULL CHECK (amount >= 0),
    currency        TEXT   NOT NULL DEFAULT '',
    window_start_ms BIGINT NOT NULL DEFAULT 0,
    spent           BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
    reserved        BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0)
);

CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (agent_id, metric, period) WHERE session_id IS NULL;
CREATE UNIQUE INDEX spend_limits_session ON spend_limits (session_id, metric, period) WHERE session_id IS NOT NULL;

CREATE TABLE spend_reservations (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES governed_sessions (id) ON DELETE CASCADE,
    request_id    TEXT COLLATE "C" NOT NULL,
    agent_id      TEXT COLLATE "C" NOT NULL,
    status        TEXT   NOT NULL CHECK (status IN ('reserved', 'settled', 'released', 'expired', 'refused')),
    input_tokens  BIGINT NOT NULL CHECK (input_tokens >= 0),
    output_tokens BIGINT NOT NULL CHECK (output_tokens >= 0),
    cost          BIGINT NOT NULL CHECK (cost >= 0),
    currency      TEXT   NOT NULL DEFAULT '',
    actual_input_tokens  BIGINT NOT NULL DEFAULT 0 CHECK (actual_input_tokens >= 0),
    actual_output_tokens BIGINT NOT NULL DEFAULT 0 CHECK (actual_output_tokens >= 0),
    actual_cost          BIGINT NOT NULL DEFAULT 0 CHECK (actual_cost >= 0),
    holds         TEXT   NOT NULL DEFAULT '[]',
    detail        TEXT   NOT NULL DEFAULT '{}',
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    closed_at_ms  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, request_id)
);

CREATE INDEX spend_reservations_live ON spend_reservations (agent_id, expires_at_ms) WHERE status = 'reserved';

CREATE TABLE audit_events (
    agent_id   TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL CHECK (seq > 0),
    at_ms      BIGINT NOT NULL,
    kind       TEXT   NOT NULL,
    outcome    TEXT   NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    request_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    detail     TEXT   NOT NULL DEFAULT '{}',
    prev_hash  TEXT   NOT NULL,
    hash       TEXT   NOT NULL,
    PRIMARY KEY (agent_id, seq)
);

CREATE TABLE audit_heads (
    agent_id  TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    seq       BIGINT NOT NULL CHECK (seq > 0),
    prev_hash TEXT   NOT NULL,
    hash      TEXT   NOT NULL
);

-- +goose Down
DROP TABLE audit_heads;
DROP TABLE audit_events;
DROP TABLE spend_reservations;
DROP TABLE spend_limits;
