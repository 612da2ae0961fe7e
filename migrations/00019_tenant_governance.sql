-- Tenants for governance, spend and audit (issue 29, part 2).
--
-- Governed-session ids stay global primary keys; what becomes per tenant
-- is what is keyed by agent name: the audit chain of an agent (its head
-- in audit_heads, its events in audit_events), the per-agent spend limits
-- and the lookup behind the per-agent cap on active sessions. Two
-- tenants' agents of the same name must not share a chain, a limit or a
-- cap, so each of those keys gains the tenant in front. SQLite cannot
-- change a primary key in place: both audit tables are rebuilt, rows
-- kept as they are (every existing row is the default tenant's, so every
-- chain verifies before and after).

-- +goose Up
CREATE TABLE audit_heads_new (
    tenant    TEXT    NOT NULL DEFAULT '',
    agent_id  TEXT    NOT NULL,
    seq       INTEGER NOT NULL CHECK (seq > 0),
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL,
    PRIMARY KEY (tenant, agent_id)
) STRICT, WITHOUT ROWID;
INSERT INTO audit_heads_new (tenant, agent_id, seq, prev_hash, hash)
    SELECT tenant, agent_id, seq, prev_hash, hash FROM audit_heads;
DROP TABLE audit_heads;
ALTER TABLE audit_heads_new RENAME TO audit_heads;

CREATE TABLE audit_events_new (
    tenant     TEXT    NOT NULL DEFAULT '',
    agent_id   TEXT    NOT NULL,
    chain      TEXT    NOT NULL DEFAULT '',
    seq        INTEGER NOT NULL CHECK (seq > 0),
    at_us      INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    outcome    TEXT    NOT NULL,
    session_id TEXT    NOT NULL DEFAULT '',
    request_id TEXT    NOT NULL DEFAULT '',
    detail     TEXT    NOT NULL DEFAULT '{}',
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    PRIMARY KEY (tenant, agent_id, chain, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO audit_events_new (tenant, agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash)
    SELECT tenant, agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash FROM audit_events;
DROP INDEX audit_events_at;
DROP TABLE audit_events;
ALTER TABLE audit_events_new RENAME TO audit_events;
CREATE INDEX audit_events_at ON audit_events (at_us, kind, outcome);

DROP INDEX governed_sessions_agent;
CREATE INDEX governed_sessions_agent ON governed_sessions (tenant, agent_id, status, expires_at_ms);

DROP INDEX spend_limits_agent;
CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (tenant, agent_id, metric, period) WHERE session_id IS NULL;

-- +goose Down
-- Back to keys without the tenant: the rows of tenants are dropped (their
-- keys may collide with the default tenant's), as migration 17's down
-- step does for agent sessions.
DELETE FROM spend_limits WHERE tenant <> '';
DROP INDEX spend_limits_agent;
CREATE UNIQUE INDEX spend_limits_agent ON spend_limits (agent_id, metric, period) WHERE session_id IS NULL;

DROP INDEX governed_sessions_agent;
CREATE INDEX governed_sessions_agent ON governed_sessions (agent_id, status, expires_at_ms);

-- The tables come back with their DDL as migration 17 left it (the
-- tenant column appended), so that its down step applies unchanged.
CREATE TABLE audit_events_new (
    agent_id   TEXT    NOT NULL,
    chain      TEXT    NOT NULL DEFAULT '',
    seq        INTEGER NOT NULL CHECK (seq > 0),
    at_us      INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    outcome    TEXT    NOT NULL,
    session_id TEXT    NOT NULL DEFAULT '',
    request_id TEXT    NOT NULL DEFAULT '',
    detail     TEXT    NOT NULL DEFAULT '{}',
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL, tenant TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, chain, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO audit_events_new (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant)
    SELECT agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant
    FROM audit_events WHERE tenant = '';
DROP INDEX audit_events_at;
DROP TABLE audit_events;
ALTER TABLE audit_events_new RENAME TO audit_events;
CREATE INDEX audit_events_at ON audit_events (at_us, kind, outcome);

ALTER TABLE audit_heads RENAME TO audit_heads_tenants;
CREATE TABLE audit_heads (
    agent_id  TEXT    NOT NULL PRIMARY KEY,
    seq       INTEGER NOT NULL CHECK (seq > 0),
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
, tenant TEXT NOT NULL DEFAULT '') STRICT, WITHOUT ROWID;
INSERT INTO audit_heads (agent_id, seq, prev_hash, hash, tenant)
    SELECT agent_id, seq, prev_hash, hash, tenant FROM audit_heads_tenants WHERE tenant = '';
DROP TABLE audit_heads_tenants;
