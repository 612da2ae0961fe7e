-- Encryption at rest of runtime sessions and their uploads (issue 29; see
-- migration 16 for the format and the shred queue).
--
-- runtime_sessions.data_key names the session's data key in the keyring
-- ('' = plaintext). Of a runtime session's columns only workspace_dir is
-- content (a customer's path); it is sealed. The agent alias, chat mode,
-- owner id, model overrides, times and turn state stay plaintext: counting,
-- eviction, the global cap, the idle sweep and the turn protocol query
-- them.
--
-- An upload of an encrypted session is never shared with another session
-- by content: its blob is keyed by HMAC-SHA256(the session's data key,
-- SHA-256 of the content) instead of the bare digest, so that the stored
-- key confirms no guessed content to a reader without the data key, and
-- the blob's content is sealed with the data key. Identical content in
-- one encrypted session still shares one blob; two sessions never do. The
-- entry's sha256 column holds that blob key; sealed_digest holds the real
-- digest, sealed (''= the upload is plaintext and sha256 is its digest).
-- Deleting the session deletes its entries, the blob trigger of migration
-- 3 deletes the blobs no entry names, and the key is queued for shredding.

-- +goose Up
ALTER TABLE runtime_sessions ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN sealed_digest TEXT NOT NULL DEFAULT '';
CREATE INDEX runtime_sessions_data_key ON runtime_sessions (data_key) WHERE data_key <> '';
-- +goose StatementBegin
CREATE TRIGGER runtime_sessions_key_shred AFTER DELETE ON runtime_sessions WHEN OLD.data_key <> '' BEGIN
    INSERT OR IGNORE INTO key_shred_queue (key_id) VALUES (OLD.data_key);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER runtime_sessions_key_shred;
DROP INDEX runtime_sessions_data_key;
ALTER TABLE uploads DROP COLUMN sealed_digest;
ALTER TABLE runtime_sessions DROP COLUMN data_key;
