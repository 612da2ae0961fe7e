-- Upload content per tenant (issue 29; see the SQLite step). A blob now
-- belongs to a tenant and is keyed by (tenant, sha256): content is shared
-- by the uploads of one tenant only. A blob that uploads of several
-- tenants referenced is copied once per tenant. The table gets the tenant
-- column's default and row-level security policy of migration 17. The
-- collector (uploads_blob_gc) counts references and takes its advisory
-- lock per (tenant, sha256); the store takes the same lock (key: the
-- tenant, '/', the hex digest) before it adds a reference. The function
-- stays SECURITY DEFINER with its fixed search path (migration 22):
-- CREATE OR REPLACE resets what it does not restate, so both restate it.

-- +goose Up
ALTER TABLE uploads DROP CONSTRAINT uploads_sha256_fkey;
ALTER TABLE upload_blobs DROP CONSTRAINT upload_blobs_pkey;
ALTER TABLE upload_blobs ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT '';

INSERT INTO upload_blobs (tenant, sha256, size_bytes, content)
    SELECT r.tenant, b.sha256, b.size_bytes, b.content
    FROM (SELECT DISTINCT tenant, sha256 FROM uploads WHERE tenant <> '') AS r
    JOIN upload_blobs AS b ON b.sha256 = r.sha256 AND b.tenant = '';
DELETE FROM upload_blobs AS b
    WHERE b.tenant = '' AND NOT EXISTS (SELECT 1 FROM uploads AS u WHERE u.tenant = '' AND u.sha256 = b.sha256);

ALTER TABLE upload_blobs ADD PRIMARY KEY (tenant, sha256);
ALTER TABLE upload_blobs ALTER COLUMN tenant SET DEFAULT COALESCE(current_setting('sessionstore.tenant', true), '');
DROP INDEX uploads_sha256;
CREATE INDEX uploads_sha256 ON uploads (tenant, sha256);
ALTER TABLE uploads ADD CONSTRAINT uploads_blob_fkey FOREIGN KEY (tenant, sha256) REFERENCES upload_blobs (tenant, sha256);

ALTER TABLE upload_blobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY sessionstore_tenant ON upload_blobs
    USING (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true))
    WITH CHECK (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true));

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION uploads_blob_gc() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.sha256 = NEW.sha256 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(1112297282, hashtext(OLD.tenant || '/' || encode(OLD.sha256, 'hex')));
    IF NOT EXISTS (SELECT 1 FROM uploads WHERE tenant = OLD.tenant AND sha256 = OLD.sha256) THEN
        DELETE FROM upload_blobs WHERE tenant = OLD.tenant AND sha256 = OLD.sha256;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION uploads_blob_gc() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.sha256 = NEW.sha256 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(1112297282, hashtext(encode(OLD.sha256, 'hex')));
    IF NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256) THEN
        DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP POLICY sessionstore_tenant ON upload_blobs;
ALTER TABLE upload_blobs DISABLE ROW LEVEL SECURITY;
ALTER TABLE uploads DROP CONSTRAINT uploads_blob_fkey;
DROP INDEX uploads_sha256;
CREATE INDEX uploads_sha256 ON uploads (sha256);
ALTER TABLE upload_blobs DROP CONSTRAINT upload_blobs_pkey;
DELETE FROM upload_blobs AS b
    WHERE b.tenant <> '' AND EXISTS (SELECT 1 FROM upload_blobs AS o
        WHERE o.sha256 = b.sha256 AND (o.tenant < b.tenant));
ALTER TABLE upload_blobs DROP COLUMN tenant;
ALTER TABLE upload_blobs ADD PRIMARY KEY (sha256);
ALTER TABLE uploads ADD CONSTRAINT uploads_sha256_fkey FOREIGN KEY (sha256) REFERENCES upload_blobs (sha256);
