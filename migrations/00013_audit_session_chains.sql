-- Audit chains per governed session (issue 28).
--
-- The trail was one hash chain per agent, so every decision of an agent
-- appended to one row (its head) and an agent's sessions decided one at a
-- time. Now each governed session has its own chain (use, reserve,
-- settle, release, close, expire), and each agent keeps one chain for its
-- own decisions (its limits, its sessions' creation and removal, each
-- removed session's final head, lapses, checkpoints).
--
-- audit_events gains the column chain: the governed session whose chain
-- the event is part of, '' for the agent's chain; the key is (agent_id,
-- chain, seq). The existing events become the agents' chains unchanged,
-- so every chain verifies before and after. A session chain's head (last
-- seq, its previous hash and its hash) lives in the session's own row,
-- so a decision writes no separate head row; audit_heads keeps the heads
-- of the agent chains.
--
-- Audit times become UTC unix microseconds like every other time: at_ms
-- becomes at_us, scaled exactly. Events written before this migration
-- hashed their time in milliseconds; Verify recomputes their hash that
-- way (see rowcodec.AuditPayload).

-- +goose Up
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
    hash       TEXT    NOT NULL,
    PRIMARY KEY (agent_id, chain, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO audit_events_new (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash)
    SELECT agent_id, '', seq, at_ms * 1000, kind, outcome, session_id, request_id, detail, prev_hash, hash FROM audit_events;
DROP INDEX audit_events_at;
DROP TABLE audit_events;
ALTER TABLE audit_events_new RENAME TO audit_events;
CREATE INDEX audit_events_at ON audit_events (at_us, kind, outcome);

ALTER TABLE governed_sessions ADD COLUMN audit_seq INTEGER NOT NULL DEFAULT 0 CHECK (audit_seq >= 0);
ALTER TABLE governed_sessions ADD COLUMN audit_prev TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';
ALTER TABLE governed_sessions ADD COLUMN audit_hash TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';

-- +goose Down
-- Back to agent chains only: the session chains cannot be folded back
-- into them (their hashes would change), so they are dropped; times go
-- back to milliseconds, rounding down.
ALTER TABLE governed_sessions DROP COLUMN audit_hash;
ALTER TABLE governed_sessions DROP COLUMN audit_prev;
ALTER TABLE governed_sessions DROP COLUMN audit_seq;
DROP INDEX audit_events_at;
ALTER TABLE audit_events RENAME TO audit_events_new;
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
INSERT INTO audit_events (agent_id, seq, at_ms, kind, outcome, session_id, request_id, detail, prev_hash, hash)
    SELECT agent_id, seq, (at_us - (((at_us % 1000) + 1000) % 1000)) / 1000, kind, outcome, session_id, request_id, detail, prev_hash, hash
    FROM audit_events_new WHERE chain = '';
DROP TABLE audit_events_new;
CREATE INDEX audit_events_at ON audit_events (at_ms, kind, outcome);
