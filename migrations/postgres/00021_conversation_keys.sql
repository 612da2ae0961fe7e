-- Encryption of conversations (see the SQLite migration of the same
-- version).

-- +goose Up
ALTER TABLE conversation_retired ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
CREATE INDEX conversation_retired_data_key ON conversation_retired (data_key) WHERE data_key <> '';
CREATE TRIGGER conversation_retired_key_shred AFTER DELETE ON conversation_retired
    FOR EACH ROW WHEN (OLD.data_key <> '') EXECUTE FUNCTION sessionstore_key_shred();

-- +goose Down
DROP TRIGGER conversation_retired_key_shred ON conversation_retired;
DROP INDEX conversation_retired_data_key;
ALTER TABLE conversation_retired DROP COLUMN data_key;
