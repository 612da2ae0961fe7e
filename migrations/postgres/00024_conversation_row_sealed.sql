-- Sealed session data of encrypted conversations (issue 29).
--
-- content_sealed = 1 says that the row's content columns (system_prompt,
-- tasks, queue_config, confirmation_policy, permission_policy,
-- security_config) hold values sealed with the conversation's data key
-- (conversations.data_key): a reader refuses plaintext there. Rows
-- written before this version (0) keep them in plaintext, also those of
-- encrypted conversations, and stay readable; the next Save of such a
-- conversation by a store with the keyring seals them. The columns
-- listing needs (name, workspace, state, model, counters, times) stay
-- plaintext (internal/sqlcore/conv_crypt.go).

-- +goose Up
ALTER TABLE conversations ADD COLUMN content_sealed INTEGER NOT NULL DEFAULT 0 CHECK (content_sealed IN (0, 1));

-- +goose Down
ALTER TABLE conversations DROP COLUMN content_sealed;
