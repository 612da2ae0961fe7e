-- The position a rewind superseded an agent session's events from (see
-- the SQLite migration of the same version), and a notification when a
-- conversation's feed epochs change by an UPDATE of the conversation
-- (a rewind that deletes none of the conversation's own rows, such as a
-- fork rewound below its fork point): the listeners of other stores read
-- again at once and see the reset.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN superseded_from BIGINT NOT NULL DEFAULT 0;
UPDATE agent_sessions SET superseded_from = fork_seq WHERE retired = 2;
CREATE TRIGGER conversations_epoch_feed_notify AFTER UPDATE OF messages_epoch, traces_epoch ON conversations
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();

-- +goose Down
DROP TRIGGER conversations_epoch_feed_notify ON conversations;
ALTER TABLE agent_sessions DROP COLUMN superseded_from;
