-- PostgreSQL dialect of the SQLite migration with the same number: the
-- epochs of the change feed, plus the notifications that wake the feeds of
-- other processes.
--
-- Epochs: the change feed (store.Feed) delivers rows by their position in a
-- stream (a message's seq, an event's seq, ...). Every stream carries an
-- epoch, an opaque random number that changes whenever positions may be
-- reused or the stream's owner is a new one with an old name: a new owner
-- row (conversation, run, agent session, governed session) gets fresh
-- epochs (column defaults), and removing the last row of a stream
-- (PopMessage, a Save that replaces the history, TrimMessages down to
-- nothing, SaveTraces, PutRuns of a run) gives it a fresh epoch (the
-- statement triggers below). Removing older rows only does not. Rows
-- written before this version have epoch 0 until they change.
--
-- Notifications: a statement that changes a watched table sends NOTIFY on
-- the schema's feed channel (sessionstore_feed_channel), but only while a
-- feed listens somewhere: a NOTIFY makes the committing transactions of the
-- whole database take one lock in turn, which writers must not pay for
-- nobody. A listening store keeps pushing the sequence
-- sessionstore_feed_gate (unix milliseconds, the server's clock) a little
-- into the future; a sequence is read and set outside transactions, so a
-- writer sees a new listener at once, and the gate lapses by itself when
-- the last listener is gone, even killed.
--
-- The trigger functions run with the search_path the schema was migrated
-- with (the store's schema), so that they find the store's tables whatever
-- the search_path of the session that writes.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION sessionstore_feed_epoch() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT (random() * 9.2e18)::bigint
$$;
-- +goose StatementEnd

ALTER TABLE conversations ADD COLUMN messages_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN traces_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversation_runs ADD COLUMN events_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE governed_sessions ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
-- Existing rows keep 0; new rows draw a fresh epoch.
ALTER TABLE conversations ALTER COLUMN messages_epoch SET DEFAULT sessionstore_feed_epoch();
ALTER TABLE conversations ALTER COLUMN traces_epoch SET DEFAULT sessionstore_feed_epoch();
ALTER TABLE conversation_runs ALTER COLUMN events_epoch SET DEFAULT sessionstore_feed_epoch();
ALTER TABLE agent_sessions ALTER COLUMN epoch SET DEFAULT sessionstore_feed_epoch();
ALTER TABLE governed_sessions ALTER COLUMN epoch SET DEFAULT sessionstore_feed_epoch();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_messages_feed_epoch() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE conversations AS c SET messages_epoch = sessionstore_feed_epoch()
    FROM (SELECT session_id, max(seq) AS top FROM gone GROUP BY session_id) AS g
    WHERE c.id = g.session_id
      AND NOT EXISTS (SELECT 1 FROM conversation_messages AS m
                      WHERE m.session_id = g.session_id AND m.seq > g.top);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER conversation_messages_feed_epoch AFTER DELETE ON conversation_messages
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_messages_feed_epoch();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_traces_feed_epoch() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE conversations AS c SET traces_epoch = sessionstore_feed_epoch()
    FROM (SELECT session_id, max(seq) AS top FROM gone GROUP BY session_id) AS g
    WHERE c.id = g.session_id
      AND NOT EXISTS (SELECT 1 FROM conversation_trace_events AS t
                      WHERE t.session_id = g.session_id AND t.seq > g.top);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER conversation_trace_events_feed_epoch AFTER DELETE ON conversation_trace_events
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_traces_feed_epoch();

-- +goose StatementBegin
CREATE FUNCTION sessionstore_run_events_feed_epoch() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE conversation_runs AS r SET events_epoch = sessionstore_feed_epoch()
    FROM (SELECT session_id, run_id, max(seq) AS top FROM gone GROUP BY session_id, run_id) AS g
    WHERE r.session_id = g.session_id AND r.run_id = g.run_id
      AND NOT EXISTS (SELECT 1 FROM conversation_run_events AS e
                      WHERE e.session_id = g.session_id AND e.run_id = g.run_id AND e.seq > g.top);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER conversation_run_events_feed_epoch AFTER DELETE ON conversation_run_events
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_run_events_feed_epoch();

CREATE SEQUENCE sessionstore_feed_gate MINVALUE 0 START WITH 0;

-- +goose StatementBegin
CREATE FUNCTION sessionstore_feed_channel(schema_name text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'sessionstore_feed_' || md5(schema_name)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION sessionstore_feed_notify() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF (SELECT last_value FROM sessionstore_feed_gate)
            > (extract(epoch FROM statement_timestamp()) * 1000)::bigint THEN
        PERFORM pg_notify(sessionstore_feed_channel(TG_TABLE_SCHEMA), '');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER conversation_messages_feed_notify AFTER INSERT OR DELETE ON conversation_messages
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER conversation_trace_events_feed_notify AFTER INSERT OR DELETE ON conversation_trace_events
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER conversation_run_events_feed_notify AFTER INSERT OR DELETE ON conversation_run_events
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER conversations_feed_notify AFTER DELETE ON conversations
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER agent_events_feed_notify AFTER INSERT ON agent_events
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER agent_sessions_feed_notify AFTER DELETE ON agent_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();
CREATE TRIGGER governed_sessions_feed_notify AFTER UPDATE OR DELETE ON governed_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_feed_notify();

-- +goose Down
DROP TRIGGER governed_sessions_feed_notify ON governed_sessions;
DROP TRIGGER agent_sessions_feed_notify ON agent_sessions;
DROP TRIGGER agent_events_feed_notify ON agent_events;
DROP TRIGGER conversations_feed_notify ON conversations;
DROP TRIGGER conversation_run_events_feed_notify ON conversation_run_events;
DROP TRIGGER conversation_trace_events_feed_notify ON conversation_trace_events;
DROP TRIGGER conversation_messages_feed_notify ON conversation_messages;
DROP FUNCTION sessionstore_feed_notify();
DROP FUNCTION sessionstore_feed_channel(text);
DROP SEQUENCE sessionstore_feed_gate;
DROP TRIGGER conversation_run_events_feed_epoch ON conversation_run_events;
DROP TRIGGER conversation_trace_events_feed_epoch ON conversation_trace_events;
DROP TRIGGER conversation_messages_feed_epoch ON conversation_messages;
DROP FUNCTION sessionstore_run_events_feed_epoch();
DROP FUNCTION sessionstore_traces_feed_epoch();
DROP FUNCTION sessionstore_messages_feed_epoch();
ALTER TABLE governed_sessions DROP COLUMN epoch;
ALTER TABLE agent_sessions DROP COLUMN epoch;
ALTER TABLE conversation_runs DROP COLUMN events_epoch;
ALTER TABLE conversations DROP COLUMN traces_epoch;
ALTER TABLE conversations DROP COLUMN messages_epoch;
DROP FUNCTION sessionstore_feed_epoch();
