-- The change feed (store.Feed) delivers rows by their position in a stream
-- (a message's seq, an event's seq, ...). A position handed out must never
-- come to name another row unnoticed, so every stream carries an epoch: an
-- opaque random number that changes whenever positions may be reused or
-- the stream's owner is a new one with an old name.
--
-- - A new owner row (conversation, run, agent session, governed session)
--   gets fresh random epochs: a deleted and re-created conversation is not
--   the old one continued.
-- - Removing the last row of a stream (PopMessage, a Save that replaces the
--   history, TrimMessages down to nothing, SaveTraces, PutRuns of a run)
--   gives the stream a fresh epoch: the next append reuses the position.
--   Removing older rows only (TrimMessages keeping the newest) does not:
--   the kept rows and the next positions stay what they were.
--
-- Rows written before this version have epoch 0 until they change. The
-- epochs are maintained by the triggers below, whatever path writes.

-- +goose Up
ALTER TABLE conversations ADD COLUMN messages_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN traces_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversation_runs ADD COLUMN events_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE governed_sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;

-- An upsert that updates an existing row does not fire AFTER INSERT, so a
-- Save over an existing conversation keeps its epochs here (the message
-- trigger below renews the messages epoch when Save replaces the history).
-- +goose StatementBegin
CREATE TRIGGER conversations_feed_epoch AFTER INSERT ON conversations
BEGIN
    UPDATE conversations SET messages_epoch = random(), traces_epoch = random() WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_messages_feed_epoch AFTER DELETE ON conversation_messages
WHEN NOT EXISTS (SELECT 1 FROM conversation_messages WHERE session_id = OLD.session_id AND seq > OLD.seq)
BEGIN
    UPDATE conversations SET messages_epoch = random() WHERE id = OLD.session_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_trace_events_feed_epoch AFTER DELETE ON conversation_trace_events
WHEN NOT EXISTS (SELECT 1 FROM conversation_trace_events WHERE session_id = OLD.session_id AND seq > OLD.seq)
BEGIN
    UPDATE conversations SET traces_epoch = random() WHERE id = OLD.session_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_runs_feed_epoch AFTER INSERT ON conversation_runs
BEGIN
    UPDATE conversation_runs SET events_epoch = random()
    WHERE session_id = NEW.session_id AND run_id = NEW.run_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER conversation_run_events_feed_epoch AFTER DELETE ON conversation_run_events
WHEN NOT EXISTS (SELECT 1 FROM conversation_run_events
    WHERE session_id = OLD.session_id AND run_id = OLD.run_id AND seq > OLD.seq)
BEGIN
    UPDATE conversation_runs SET events_epoch = random()
    WHERE session_id = OLD.session_id AND run_id = OLD.run_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_sessions_feed_epoch AFTER INSERT ON agent_sessions
BEGIN
    UPDATE agent_sessions SET epoch = random() WHERE pk = NEW.pk;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER governed_sessions_feed_epoch AFTER INSERT ON governed_sessions
BEGIN
    UPDATE governed_sessions SET epoch = random() WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER governed_sessions_feed_epoch;
DROP TRIGGER agent_sessions_feed_epoch;
DROP TRIGGER conversation_run_events_feed_epoch;
DROP TRIGGER conversation_runs_feed_epoch;
DROP TRIGGER conversation_trace_events_feed_epoch;
DROP TRIGGER conversation_messages_feed_epoch;
DROP TRIGGER conversations_feed_epoch;
ALTER TABLE governed_sessions DROP COLUMN epoch;
ALTER TABLE agent_sessions DROP COLUMN epoch;
ALTER TABLE conversation_runs DROP COLUMN events_epoch;
ALTER TABLE conversations DROP COLUMN traces_epoch;
ALTER TABLE conversations DROP COLUMN messages_epoch;
