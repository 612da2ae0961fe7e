-- The audit trail by time (issue 24): the console's decisions per day
-- count the audit events of a time range by UTC day, kind and outcome
-- (store.AuditCounter). This index covers that query, so it reads one
-- range of the index instead of every event of every chain.

-- +goose Up
CREATE INDEX audit_events_at ON audit_events (at_ms, kind, outcome);

-- +goose Down
DROP INDEX audit_events_at;
