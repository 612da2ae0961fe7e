-- The position a rewind superseded an agent session's events from (see
-- the SQLite migration of the same version), and a notification when a
-- conversation's feed epochs change by an UPDATE of the conversation
-- (a rewind that deletes none of the conversation's own rows, such as a
-- fork rewound below its fork point): the listeners of other stores read
-- again at once and see the reset.

--
-- sweep_removals: the conversations (and agent sessions) a sweep is
-- removing over several transactions (one with more rows than a batch).
-- An agent session is hidden by its retirement (retired = 1, as a delete
-- does), its events then go a batch at a time. For a conversation, the first
-- transaction hides the conversation (its tenant becomes '_removing',
-- which no tenant is named: ValidateTenant refuses a leading '_') and
-- records it here with its tenant; the next ones delete its rows, a
-- batch at a time; the last gives the tenant back and deletes the
-- conversation as Delete does, and its row here. A sweep finishes the
-- removals it finds here first, so one interrupted mid-way is finished
-- by the next sweep.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN superseded_from BIGINT NOT NULL DEFAULT 0;
UPDATE agent_sessions SET superseded_from = fork_seq WHERE retired = 2;
CREATE TRIGGER conversations_epoch_feed_notify AFTER UPDATE OF messages_epoch, traces_epoch ON conversations
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();

CREATE TABLE sweep_removals (
    -- 'conversation' (id: its id) or 'agent_session' (id: its row's pk)
    kind          TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    tenant        TEXT    NOT NULL,
    started_at_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
);

-- +goose Down
DROP TABLE sweep_removals;
DROP TRIGGER conversations_epoch_feed_notify ON conversations;
ALTER TABLE agent_sessions DROP COLUMN superseded_from;
