-- Agent sessions as a history that can branch (fork, rewind, compaction),
-- and event timestamps kept to the nanosecond.
--
-- Lineage (not the a3s conversation's own "parent" field): a session row
-- may name the row it was forked from (lineage_parent) and the position it
-- was forked at (fork_seq). Its own events are those with seq > fork_seq;
-- the ones up to fork_seq are read from the parent's view, so a fork
-- copies no history. initial_state is the session scope the row starts
-- from (the creation state, or the state at the fork point).
--
-- agent_state_log keeps every value an event's delta gave a session-scope
-- key, at the event's position, so that the state at any position is
-- initial_state with, for each key, its last value up to that position:
-- one index lookup per key, whatever the length of the history.
--
-- A row that is no longer a live session but still holds history keeps
-- retired <> 0: 1 = deleted while forks still read from it, 2 = the
-- events a rewind superseded (superseded_of names the live row they were
-- taken from). Only live rows (retired = 0) own their key.
--
-- Compaction records: compact_to > 0 marks the summary event written by
-- the store's compaction call, covering positions compact_from..compact_to.
--
-- ts_ns is the part of an event's timestamp below the microsecond
-- (0..999): ts_us * 1000 + ts_ns is the timestamp in nanoseconds.

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN lineage_parent INTEGER;
ALTER TABLE agent_sessions ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN superseded_of INTEGER;
ALTER TABLE agent_sessions ADD COLUMN initial_state TEXT NOT NULL DEFAULT '{}';
DROP INDEX agent_sessions_key;
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id) WHERE retired = 0;
CREATE INDEX agent_sessions_lineage ON agent_sessions (lineage_parent) WHERE lineage_parent IS NOT NULL;
CREATE INDEX agent_sessions_superseded ON agent_sessions (superseded_of) WHERE superseded_of IS NOT NULL;

ALTER TABLE agent_events ADD COLUMN ts_ns INTEGER NOT NULL DEFAULT 0 CHECK (ts_ns >= 0 AND ts_ns < 1000);
ALTER TABLE agent_events ADD COLUMN compact_from INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_events ADD COLUMN compact_to INTEGER NOT NULL DEFAULT 0;
CREATE INDEX agent_events_compactions ON agent_events (session_pk, seq) WHERE compact_to > 0;

CREATE TABLE agent_state_log (
    session_pk INTEGER NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    PRIMARY KEY (session_pk, key, seq)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE agent_state_log;
DROP INDEX agent_events_compactions;
ALTER TABLE agent_events DROP COLUMN compact_to;
ALTER TABLE agent_events DROP COLUMN compact_from;
ALTER TABLE agent_events DROP COLUMN ts_ns;
-- Forks lose what they read from their parents: the old schema has no lineage.
DELETE FROM agent_sessions WHERE retired <> 0;
DROP INDEX agent_sessions_superseded;
DROP INDEX agent_sessions_lineage;
DROP INDEX agent_sessions_key;
CREATE UNIQUE INDEX agent_sessions_key ON agent_sessions (app, user_id, session_id);
ALTER TABLE agent_sessions DROP COLUMN initial_state;
ALTER TABLE agent_sessions DROP COLUMN superseded_of;
ALTER TABLE agent_sessions DROP COLUMN retired;
ALTER TABLE agent_sessions DROP COLUMN fork_seq;
ALTER TABLE agent_sessions DROP COLUMN lineage_parent;
