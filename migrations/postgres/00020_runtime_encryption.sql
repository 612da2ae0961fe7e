-- Encryption at rest of runtime sessions and their uploads (see the SQLite
-- migration of the same version).

-- +goose Up
ALTER TABLE runtime_sessions ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN sealed_digest TEXT NOT NULL DEFAULT '';
CREATE INDEX runtime_sessions_data_key ON runtime_sessions (data_key) WHERE data_key <> '';
CREATE TRIGGER runtime_sessions_key_shred AFTER DELETE ON runtime_sessions
    FOR EACH ROW WHEN (OLD.data_key <> '') EXECUTE FUNCTION sessionstore_key_shred();

-- +goose Down
DROP TRIGGER runtime_sessions_key_shred ON runtime_sessions;
DROP INDEX runtime_sessions_data_key;
ALTER TABLE uploads DROP COLUMN sealed_digest;
ALTER TABLE runtime_sessions DROP COLUMN data_key;
