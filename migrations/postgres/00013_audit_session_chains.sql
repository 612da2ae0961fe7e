-- Audit chains per governed session (issue 28), PostgreSQL dialect of the
-- SQLite migration with the same number (see there).

-- +goose Up
ALTER TABLE audit_events ADD COLUMN chain TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events ADD PRIMARY KEY (agent_id, chain, seq);
DROP INDEX audit_events_at;
ALTER TABLE audit_events RENAME COLUMN at_ms TO at_us;
UPDATE audit_events SET at_us = at_us * 1000;
CREATE INDEX audit_events_at ON audit_events (at_us, kind, outcome);

ALTER TABLE governed_sessions ADD COLUMN audit_seq BIGINT NOT NULL DEFAULT 0 CHECK (audit_seq >= 0);
ALTER TABLE governed_sessions ADD COLUMN audit_prev TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';
ALTER TABLE governed_sessions ADD COLUMN audit_hash TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';

-- +goose Down
ALTER TABLE governed_sessions DROP COLUMN audit_hash;
ALTER TABLE governed_sessions DROP COLUMN audit_prev;
ALTER TABLE governed_sessions DROP COLUMN audit_seq;
DELETE FROM audit_events WHERE chain <> '';
DROP INDEX audit_events_at;
UPDATE audit_events SET at_us = floor(at_us / 1000.0);
ALTER TABLE audit_events RENAME COLUMN at_us TO at_ms;
CREATE INDEX audit_events_at ON audit_events (at_ms, kind, outcome);
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events DROP COLUMN chain;
ALTER TABLE audit_events ADD PRIMARY KEY (agent_id, seq);
