-- The list of governed sessions reads one page: a keyset page of a
-- tenant's sessions in id order (WHERE tenant = ? AND id > ? ORDER BY id
-- LIMIT n, the console's list and its ?after= pages) walks this index
-- from the cursor and stops after the page. Before it, SQLite (which has
-- no statistics here) chose the (tenant, agent_id, ...) index for the
-- tenant's equality and sorted every session of the tenant for each page:
-- 0.5 s a page at 100,000 sessions. It costs one more index entry per
-- created session.

-- +goose Up
CREATE INDEX governed_sessions_tenant_id ON governed_sessions (tenant, id);

-- +goose Down
DROP INDEX governed_sessions_tenant_id;
