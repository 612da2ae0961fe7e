-- A list of governed sessions filtered by status reads the status from
-- the index it walks.
--
-- The keyset list (WHERE tenant = ? AND id > ? ORDER BY id LIMIT n,
-- migration 29) walks (tenant, id) and read each session's row to test
-- its status: a status few sessions have (closed, expired) read every row
-- of the tenant for one page, 177 ms at 100,000 sessions with 10 closed
-- (BenchmarkLargeStore/governed/closed in package console). With the
-- status and the expiry in the index, the test is made on the index entry
-- and only the page's rows are read. The entry is a few bytes longer (a
-- create writes the same pages); a close or an expiry, which change the
-- status, rewrite it (a Use does not). PostgreSQL's step of this number
-- changes nothing: its planner has statistics and chooses for itself.

-- +goose Up
DROP INDEX governed_sessions_tenant_id;
CREATE INDEX governed_sessions_tenant_id ON governed_sessions (tenant, id, status, expires_at_ms);

-- +goose Down
DROP INDEX governed_sessions_tenant_id;
CREATE INDEX governed_sessions_tenant_id ON governed_sessions (tenant, id);
