-- The audit trail by time (issue 24), PostgreSQL dialect of the SQLite
-- migration with the same number (see there).

-- +goose Up
CREATE INDEX audit_events_at ON audit_events (at_ms, kind, outcome);

-- +goose Down
DROP INDEX audit_events_at;
