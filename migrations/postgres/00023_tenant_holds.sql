-- Holds per tenant: the tenant joins retention_holds' primary key, so
-- that two tenants can hold "the same" session (agent-session keys are
-- unique per tenant; ids of the other facets are global, but a tenant may
-- hold an id it does not own, which then protects nothing) and a tenant
-- handle lists and releases its own holds only. The tenant comes last in
-- the key: the sweep's counts of held sessions per facet still walk the
-- key, and a tenant's list of its holds reads the whole table (few rows).
-- A hold protects a session of its own tenant only (the sweep compares
-- the tenants); the hold of an existing conversation, runtime session or
-- governed session of a tenant, placed through the store before this
-- version (which gave it the default tenant), is moved to that tenant
-- here, so that it keeps protecting what it protected.
--
-- What else retention keeps per session (last_access_ms, migration 11) is
-- a column of the session's own row, which carries its tenant already.
-- The table has had its tenant column and row-level security policy since
-- version 17.

-- +goose Up
UPDATE retention_holds AS h SET tenant = c.tenant FROM conversations AS c
WHERE h.facet = 'conversations' AND h.tenant = '' AND c.id = h.id AND c.tenant <> '';
UPDATE retention_holds AS h SET tenant = r.tenant FROM runtime_sessions AS r
WHERE h.facet = 'runtime' AND h.tenant = '' AND r.id = h.id AND r.tenant <> '';
UPDATE retention_holds AS h SET tenant = g.tenant FROM governed_sessions AS g
WHERE h.facet = 'governance' AND h.tenant = '' AND g.id = h.id AND g.tenant <> '';
ALTER TABLE retention_holds DROP CONSTRAINT retention_holds_pkey;
ALTER TABLE retention_holds ADD PRIMARY KEY (facet, app, user_id, id, tenant);

-- +goose Down
-- The key without the tenant: where tenants hold the same session, the
-- hold of the first tenant in byte order (the default tenant first) stays.
-- Holds keep the tenant they have (version 22's sweep compares tenants
-- for agent sessions only, so a moved hold still protects its session).
DELETE FROM retention_holds AS h WHERE EXISTS (SELECT 1 FROM retention_holds AS o
    WHERE o.facet = h.facet AND o.app = h.app AND o.user_id = h.user_id AND o.id = h.id AND o.tenant < h.tenant);
ALTER TABLE retention_holds DROP CONSTRAINT retention_holds_pkey;
ALTER TABLE retention_holds ADD PRIMARY KEY (facet, app, user_id, id);
