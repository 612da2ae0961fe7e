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
--
-- SQLite rebuilds the table (STRICT, WITHOUT ROWID) keeping its rows.

-- +goose Up
ALTER TABLE retention_holds RENAME TO retention_holds_v22;
CREATE TABLE retention_holds (
    tenant        TEXT    NOT NULL DEFAULT '',
    facet         TEXT    NOT NULL,
    app           TEXT    NOT NULL DEFAULT '',
    user_id       TEXT    NOT NULL DEFAULT '',
    id            TEXT    NOT NULL,
    reason        TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (facet, app, user_id, id, tenant)
) STRICT, WITHOUT ROWID;
INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms)
SELECT CASE
        WHEN h.tenant <> '' THEN h.tenant
        WHEN h.facet = 'conversations' THEN coalesce((SELECT tenant FROM conversations WHERE id = h.id), '')
        WHEN h.facet = 'runtime' THEN coalesce((SELECT tenant FROM runtime_sessions WHERE id = h.id), '')
        WHEN h.facet = 'governance' THEN coalesce((SELECT tenant FROM governed_sessions WHERE id = h.id), '')
        ELSE '' END,
    h.facet, h.app, h.user_id, h.id, h.reason, h.created_at_ms
FROM retention_holds_v22 AS h;
DROP TABLE retention_holds_v22;

-- +goose Down
-- The key without the tenant: where tenants hold the same session, the
-- hold of the first tenant in byte order (the default tenant first) stays.
-- Holds keep the tenant they have (version 22's sweep compares tenants
-- for agent sessions only, so a moved hold still protects its session).
ALTER TABLE retention_holds RENAME TO retention_holds_v23;
CREATE TABLE retention_holds (
    facet         TEXT    NOT NULL,
    app           TEXT    NOT NULL DEFAULT '',
    user_id       TEXT    NOT NULL DEFAULT '',
    id            TEXT    NOT NULL,
    reason        TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL, tenant TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (facet, app, user_id, id)
) STRICT, WITHOUT ROWID;
INSERT OR IGNORE INTO retention_holds (facet, app, user_id, id, reason, created_at_ms, tenant)
SELECT facet, app, user_id, id, reason, created_at_ms, tenant FROM retention_holds_v23
ORDER BY tenant, facet, app, user_id, id;
DROP TABLE retention_holds_v23;
