-- The index the idle sweep walks no longer takes a write on every append
-- (see the SQLite step of the same number). On PostgreSQL an update that
-- changes no indexed column is a heap-only (HOT) update, which writes no
-- index at all: with (updated_at_ms, pk) indexed, every append's update
-- of its session row wrote every index of agent_sessions. updated_min,
-- updated_at_ms in whole minutes, is set by a BEFORE trigger, so an
-- append within the minute of its session's last write changes no
-- indexed column.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN updated_min BIGINT NOT NULL DEFAULT 0;
UPDATE agent_sessions SET updated_min = updated_at_ms / 60000;
DROP INDEX agent_sessions_updated;
CREATE INDEX agent_sessions_idle ON agent_sessions (updated_min, pk);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_agent_sessions_idle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_min := NEW.updated_at_ms / 60000;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER agent_sessions_idle BEFORE INSERT OR UPDATE ON agent_sessions
    FOR EACH ROW EXECUTE FUNCTION sessionstore_agent_sessions_idle();

-- +goose Down
DROP TRIGGER agent_sessions_idle ON agent_sessions;
DROP FUNCTION sessionstore_agent_sessions_idle();
DROP INDEX agent_sessions_idle;
ALTER TABLE agent_sessions DROP COLUMN updated_min;
CREATE INDEX agent_sessions_updated ON agent_sessions (updated_at_ms, pk);
