-- Turn leases, PostgreSQL dialect of the SQLite migration with the same
-- number: a running turn belongs to a live store. The store that began a
-- turn keeps renewing its lease (turn_lease_ms, an expiry in UTC unix
-- milliseconds) while its process lives; a running turn whose lease has
-- lapsed is stale: its process is presumed dead, it no longer blocks
-- eviction, a new BeginTurn supersedes it without keeping a cause for it.
-- Cancel causes carry the lease of the turn's store (owner, lease_ms, renewed
-- with it), so that the causes of dead turns can be reaped, and whether the
-- turn was ended (ended): an ended turn's cause stays takeable once.
-- Turns and causes recorded before this version have no lease (0): they are
-- stale at once.

-- +goose Up
ALTER TABLE runtime_sessions ADD COLUMN turn_lease_ms BIGINT NOT NULL DEFAULT 0;
-- The heartbeat renews the leases of one store's turns.
CREATE INDEX runtime_sessions_turn_owner ON runtime_sessions (turn_owner);

ALTER TABLE runtime_cancel_causes
    ADD COLUMN owner    TEXT    NOT NULL DEFAULT '',
    ADD COLUMN lease_ms BIGINT  NOT NULL DEFAULT 0,
    ADD COLUMN ended    BOOLEAN NOT NULL DEFAULT false;
-- Renewal by owner, reaping by lapsed lease.
CREATE INDEX runtime_cancel_causes_owner ON runtime_cancel_causes (owner);
CREATE INDEX runtime_cancel_causes_lease ON runtime_cancel_causes (lease_ms);

-- +goose Down
DROP INDEX runtime_cancel_causes_lease;
DROP INDEX runtime_cancel_causes_owner;
ALTER TABLE runtime_cancel_causes DROP COLUMN ended, DROP COLUMN lease_ms, DROP COLUMN owner;
DROP INDEX runtime_sessions_turn_owner;
ALTER TABLE runtime_sessions DROP COLUMN turn_lease_ms;
