-- Tenants for conversations and runtime sessions (issue 29, part 1): the retired histories of
-- conversation lineage (conversation_retired and the messages they hold)
-- get the tenant column and the row-level security policy the other
-- session tables got in migration 17, with the transaction's
-- sessionstore.tenant setting as the column's default; the indexes that
-- list conversations lead with the tenant and runtime_sessions gets one on
-- (tenant, id), so that one tenant's page is an index range. Child rows of a conversation written by a tenant handle take
-- the tenant from that default (migration 17); conversation ids stay
-- global primary keys (see the SQLite migration).

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['conversation_retired', 'conversation_retired_messages']
    LOOP
        EXECUTE format('ALTER TABLE %I ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT %L', t, '');
        EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant SET DEFAULT COALESCE(current_setting(%L, true), %L)',
            t, 'sessionstore.tenant', '');
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY sessionstore_tenant ON %I
            USING (tenant <> %L AND tenant = current_setting(%L, true))
            WITH CHECK (tenant <> %L AND tenant = current_setting(%L, true))',
            t, '', 'sessionstore.tenant', '', 'sessionstore.tenant');
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (tenant, parent_id, id);
CREATE INDEX conversations_tenant ON conversations (tenant, id);
CREATE INDEX runtime_sessions_tenant ON runtime_sessions (tenant, id);

-- +goose Down
DROP INDEX runtime_sessions_tenant;
DROP INDEX conversations_tenant;
DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (parent_id, id);

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['conversation_retired', 'conversation_retired_messages']
    LOOP
        EXECUTE format('DROP POLICY sessionstore_tenant ON %I', t);
        EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I DROP COLUMN tenant', t);
    END LOOP;
END
$$;
-- +goose StatementEnd
