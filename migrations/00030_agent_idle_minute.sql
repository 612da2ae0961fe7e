-- The index the idle sweep walks no longer takes a write on every append.
--
-- agent_sessions_updated (migration 11) indexed (updated_at_ms, pk): every
-- append moves its session's updated_at_ms, so it rewrote that index's
-- entry, one page in the log on each append (1 of 9.0 pages of an event
-- append with a state delta; sqlstore's TestPageBudgetAppends lists them).
-- Now the walk of the agent-sessions-idle policy (and of the size budget)
-- reads agent_sessions_idle on (updated_min, pk), where updated_min is
-- updated_at_ms in whole minutes (updated_at_ms / 60000): an append writes
-- the index only when its session's last write was in an earlier minute,
-- so the appends of one turn (a user event, tool calls, the reply) write
-- it once. The walk still checks updated_at_ms itself, so what is due is
-- exact; only the order within one minute is by row (creation) rather
-- than by the millisecond.
--
-- Triggers keep updated_min: a statement that sets updated_at_ms does not
-- set it (setting a column to its own value still rewrites an index
-- entry), the trigger does, and only when the minute changed.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN updated_min INTEGER NOT NULL DEFAULT 0;
UPDATE agent_sessions SET updated_min = updated_at_ms / 60000;
DROP INDEX agent_sessions_updated;
CREATE INDEX agent_sessions_idle ON agent_sessions (updated_min, pk);

-- +goose StatementBegin
CREATE TRIGGER agent_sessions_idle_ai AFTER INSERT ON agent_sessions
WHEN NEW.updated_min <> NEW.updated_at_ms / 60000
BEGIN
    UPDATE agent_sessions SET updated_min = NEW.updated_at_ms / 60000 WHERE pk = NEW.pk;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_sessions_idle_au AFTER UPDATE OF updated_at_ms, updated_min ON agent_sessions
WHEN NEW.updated_min <> NEW.updated_at_ms / 60000
BEGIN
    UPDATE agent_sessions SET updated_min = NEW.updated_at_ms / 60000 WHERE pk = NEW.pk;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER agent_sessions_idle_au;
DROP TRIGGER agent_sessions_idle_ai;
DROP INDEX agent_sessions_idle;
ALTER TABLE agent_sessions DROP COLUMN updated_min;
CREATE INDEX agent_sessions_updated ON agent_sessions (updated_at_ms, pk);
