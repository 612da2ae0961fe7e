-- The list of governed sessions reads one page: a keyset page of a
-- tenant's sessions in id order (WHERE tenant = $1 AND id > $2 ORDER BY
-- id LIMIT n) walks this index from the cursor and stops after the page,
-- whatever the share of the tenant's rows in the table (the primary key
-- alone reads past every other tenant's sessions; the (tenant, agent_id,
-- ...) index sorts every session of the tenant). Same step as SQLite's.

-- +goose Up
CREATE INDEX governed_sessions_tenant_id ON governed_sessions (tenant, id);

-- +goose Down
DROP INDEX governed_sessions_tenant_id;
