-- Upload content per tenant (issue 29). Plaintext upload content was
-- stored once per SHA-256 digest across the whole store: a tenant
-- uploading a file another tenant had uploaded added no blob, which its
-- size or timing could tell. A blob now belongs to a tenant, keyed by
-- (tenant, sha256): content is shared by the uploads of one tenant only,
-- and two tenants' copies of the same file are two blobs. An encrypted
-- session's blobs (keyed by an HMAC under its data key, migration 20) get
-- their session's tenant like any other.
--
-- SQLite cannot change a primary key or a foreign key in place: both
-- tables are copied aside (temporary tables), dropped, created anew and
-- filled again. A blob that uploads of several tenants referenced is
-- copied once per tenant. The collector triggers (migration 3, dropped
-- with the table) count references per (tenant, sha256).

-- +goose Up
CREATE TEMP TABLE upload_blobs_copy AS
    SELECT r.tenant, b.sha256, b.size_bytes, b.content
    FROM (SELECT DISTINCT tenant, sha256 FROM uploads) AS r
    JOIN upload_blobs AS b ON b.sha256 = r.sha256;
CREATE TEMP TABLE uploads_copy AS SELECT * FROM uploads;
-- Dropping a table runs no triggers; the old collector triggers go with it.
DROP TABLE uploads;
DROP TABLE upload_blobs;

CREATE TABLE upload_blobs (
    tenant     TEXT    NOT NULL DEFAULT '',
    sha256     BLOB    NOT NULL CHECK (length(sha256) = 32),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    content    BLOB    NOT NULL CHECK (length(content) = size_bytes),
    PRIMARY KEY (tenant, sha256)
) STRICT;

CREATE TABLE uploads (
    session_id     TEXT    NOT NULL REFERENCES runtime_sessions (id) ON DELETE CASCADE,
    ref_id         TEXT    NOT NULL,
    marker         TEXT    NOT NULL,
    workspace_path TEXT    NOT NULL,
    sha256         BLOB    NOT NULL,
    size_bytes     INTEGER NOT NULL CHECK (size_bytes >= 0),
    created_at_ms  INTEGER NOT NULL,
    tenant         TEXT    NOT NULL DEFAULT '',
    sealed_digest  TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, ref_id),
    FOREIGN KEY (tenant, sha256) REFERENCES upload_blobs (tenant, sha256)
) STRICT, WITHOUT ROWID;

INSERT INTO upload_blobs (tenant, sha256, size_bytes, content)
    SELECT tenant, sha256, size_bytes, content FROM upload_blobs_copy;
INSERT INTO uploads (session_id, ref_id, marker, workspace_path, sha256, size_bytes,
        created_at_ms, tenant, sealed_digest)
    SELECT session_id, ref_id, marker, workspace_path, sha256, size_bytes,
        created_at_ms, tenant, sealed_digest
    FROM uploads_copy;
DROP TABLE upload_blobs_copy;
DROP TABLE uploads_copy;

-- Reference checks of the blob collector (and of the foreign key).
CREATE INDEX uploads_sha256 ON uploads (tenant, sha256);

-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_delete AFTER DELETE ON uploads
WHEN NOT EXISTS (SELECT 1 FROM uploads WHERE tenant = OLD.tenant AND sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE tenant = OLD.tenant AND sha256 = OLD.sha256;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_update AFTER UPDATE OF sha256 ON uploads
WHEN OLD.sha256 <> NEW.sha256
    AND NOT EXISTS (SELECT 1 FROM uploads WHERE tenant = OLD.tenant AND sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE tenant = OLD.tenant AND sha256 = OLD.sha256;
END;
-- +goose StatementEnd

-- +goose Down
-- Back to one blob per digest: tenants' copies of the same content become
-- one blob again. The tables are created as migrations 3, 17 and 20 left
-- them.
CREATE TEMP TABLE upload_blobs_copy AS
    SELECT sha256, size_bytes, content FROM upload_blobs GROUP BY sha256;
CREATE TEMP TABLE uploads_copy AS SELECT * FROM uploads;
DROP TABLE uploads;
DROP TABLE upload_blobs;

CREATE TABLE upload_blobs (
    sha256     BLOB    NOT NULL PRIMARY KEY CHECK (length(sha256) = 32),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    content    BLOB    NOT NULL CHECK (length(content) = size_bytes)
) STRICT;

CREATE TABLE uploads (
    session_id     TEXT    NOT NULL REFERENCES runtime_sessions (id) ON DELETE CASCADE,
    ref_id         TEXT    NOT NULL,
    marker         TEXT    NOT NULL,
    workspace_path TEXT    NOT NULL,
    sha256         BLOB    NOT NULL REFERENCES upload_blobs (sha256),
    size_bytes     INTEGER NOT NULL CHECK (size_bytes >= 0),
    created_at_ms  INTEGER NOT NULL,
    PRIMARY KEY (session_id, ref_id)
) STRICT, WITHOUT ROWID;
ALTER TABLE uploads ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN sealed_digest TEXT NOT NULL DEFAULT '';

INSERT INTO upload_blobs (sha256, size_bytes, content)
    SELECT sha256, size_bytes, content FROM upload_blobs_copy;
INSERT INTO uploads (session_id, ref_id, marker, workspace_path, sha256, size_bytes,
        created_at_ms, tenant, sealed_digest)
    SELECT session_id, ref_id, marker, workspace_path, sha256, size_bytes,
        created_at_ms, tenant, sealed_digest
    FROM uploads_copy;
DROP TABLE upload_blobs_copy;
DROP TABLE uploads_copy;

CREATE INDEX uploads_sha256 ON uploads (sha256);

-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_delete AFTER DELETE ON uploads
WHEN NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER uploads_blob_gc_update AFTER UPDATE OF sha256 ON uploads
WHEN OLD.sha256 <> NEW.sha256 AND NOT EXISTS (SELECT 1 FROM uploads WHERE sha256 = OLD.sha256)
BEGIN
    DELETE FROM upload_blobs WHERE sha256 = OLD.sha256;
END;
-- +goose StatementEnd
