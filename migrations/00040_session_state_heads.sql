-- A session's current state lives beside its log: one B-tree, not two.
--
-- An append with a session-scope delta wrote each key twice: its value at
-- the event's position in agent_state_log (for forks and rewinds, which
-- read the state at any position) and the current value in
-- agent_session_state (for reads). The two are separate B-trees, so such
-- an append wrote a page of each: 2 of its 7.5 pages (a runner's event
-- with a state delta, adk's TestPagesPerAppend).
--
-- Now the current value of a key is a row of agent_state_log at the
-- position 9223372036854775807 (the largest INTEGER, which no event
-- reaches): the key's head. It sorts right after the key's newest logged
-- value, so the append's two rows share a leaf page. Reads find a
-- session's heads by skipping from key to key on the primary key (two
-- lookups per key, whatever the length of the log); the reads of the
-- state at a position (seq <= the position) never see a head.
--
-- The values move as stored: a sealed value keeps its associated data
-- (the label of agent_session_state.value), so the step needs no key.

-- +goose Up
INSERT INTO agent_state_log (session_pk, key, seq, value, tenant)
    SELECT session_pk, key, 9223372036854775807, value, tenant FROM agent_session_state;
DROP TABLE agent_session_state;

-- +goose Down
-- The table as migrations 4 and 17 left it (its text is the schema's).
CREATE TABLE agent_session_state (
    session_pk INTEGER NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL, tenant TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_pk, key)
) STRICT, WITHOUT ROWID;
INSERT INTO agent_session_state (session_pk, key, value, tenant)
    SELECT session_pk, key, value, tenant FROM agent_state_log WHERE seq = 9223372036854775807;
DELETE FROM agent_state_log WHERE seq = 9223372036854775807;
