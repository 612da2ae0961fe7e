-- Encryption of conversations (see migration 16).
--
-- A conversation's content columns are sealed with its data key
-- (conversations.data_key). Conversation lineage (migration 15) moves a
-- deleted or rewound conversation's message rows into
-- conversation_retired_messages, which forks keep reading: the retired
-- history names the data key its rows were sealed with, so that a fork
-- opens them with that key and the key is not shredded while a retired
-- history names it. Deleting the retired history queues the key for
-- shredding, as deleting a conversation does.

-- +goose Up
ALTER TABLE conversation_retired ADD COLUMN data_key TEXT NOT NULL DEFAULT '';
CREATE INDEX conversation_retired_data_key ON conversation_retired (data_key) WHERE data_key <> '';
-- +goose StatementBegin
CREATE TRIGGER conversation_retired_key_shred AFTER DELETE ON conversation_retired WHEN OLD.data_key <> '' BEGIN
    INSERT OR IGNORE INTO key_shred_queue (key_id) VALUES (OLD.data_key);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER conversation_retired_key_shred;
DROP INDEX conversation_retired_data_key;
ALTER TABLE conversation_retired DROP COLUMN data_key;
