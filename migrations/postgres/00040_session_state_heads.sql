-- A session's current state lives beside its log: one table, not two.
--
-- The current value of a session-scope key is a row of agent_state_log at
-- the position 9223372036854775807 (the largest bigint, which no event
-- reaches): the key's head, next to the key's newest logged value in the
-- primary key. An append with a state delta then writes one table's rows
-- instead of two tables' (see the SQLite step of this number, where it
-- saves a page per append). Reads find a session's heads by skipping from
-- key to key on the primary key; the reads of the state at a position
-- (seq <= the position) never see a head. Values move as stored (a sealed
-- value keeps its associated data), so the step needs no key; the rows
-- keep their tenant, and agent_state_log has the same row-level security
-- policy (migration 17).

-- +goose Up
INSERT INTO agent_state_log (session_pk, key, seq, value, tenant)
    SELECT session_pk, key, 9223372036854775807, value, tenant FROM agent_session_state;
DROP TABLE agent_session_state;

-- +goose Down
CREATE TABLE agent_session_state (
    session_pk BIGINT NOT NULL REFERENCES agent_sessions (pk) ON DELETE CASCADE,
    key        TEXT   NOT NULL,
    value      TEXT   NOT NULL,
    tenant     TEXT COLLATE "C" NOT NULL DEFAULT COALESCE(current_setting('sessionstore.tenant', true), ''),
    PRIMARY KEY (session_pk, key)
);
ALTER TABLE agent_session_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY sessionstore_tenant ON agent_session_state
    USING (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true))
    WITH CHECK (tenant <> '' AND tenant = current_setting('sessionstore.tenant', true));
INSERT INTO agent_session_state (session_pk, key, value, tenant)
    SELECT session_pk, key, value, tenant FROM agent_state_log WHERE seq = 9223372036854775807;
DELETE FROM agent_state_log WHERE seq = 9223372036854775807;
