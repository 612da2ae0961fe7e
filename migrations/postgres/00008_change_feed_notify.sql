-- The change feed's triggers (migration 7), made cheaper and independent of
-- the schema's name.
--
-- sessionstore_feed_notify runs after every statement that writes a watched
-- table, governed-session Use included, whether or not anybody listens. It
-- now reads the gate with pg_sequence_last_value (a plain function call,
-- evaluated without running a query: measured about 2 µs per statement
-- instead of about 25 µs for SELECT last_value FROM the sequence) and
-- finds the gate and the channel through the schema of the table that
-- fired it, so it no longer carries a fixed search_path (setting one costs
-- on every call too).
--
-- The epoch trigger functions drop their fixed search_path as well: it
-- named the schema as it was called when migrated, so renaming the schema
-- broke every write that removes messages, traces or run events. They now
-- resolve the store's tables through the search_path of the session that
-- writes, like every statement of the store does.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_feed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_sequence_last_value(format('%I.sessionstore_feed_gate', TG_TABLE_SCHEMA)::regclass)
            > (extract(epoch FROM statement_timestamp()) * 1000)::bigint THEN
        PERFORM pg_notify('sessionstore_feed_' || md5(TG_TABLE_SCHEMA), '');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
ALTER FUNCTION sessionstore_messages_feed_epoch() RESET search_path;
ALTER FUNCTION sessionstore_traces_feed_epoch() RESET search_path;
ALTER FUNCTION sessionstore_run_events_feed_epoch() RESET search_path;

-- +goose Down
ALTER FUNCTION sessionstore_run_events_feed_epoch() SET search_path FROM CURRENT;
ALTER FUNCTION sessionstore_traces_feed_epoch() SET search_path FROM CURRENT;
ALTER FUNCTION sessionstore_messages_feed_epoch() SET search_path FROM CURRENT;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_feed_notify() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF (SELECT last_value FROM sessionstore_feed_gate)
            > (extract(epoch FROM statement_timestamp()) * 1000)::bigint THEN
        PERFORM pg_notify(sessionstore_feed_channel(TG_TABLE_SCHEMA), '');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
