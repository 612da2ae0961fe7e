-- The position a rewind superseded an agent session's events from.
--
-- A rewind moves the superseded events to a holder row (retired = 2,
-- migration 12) that reads the history before them. When the session is
-- a fork rewound below its fork point, the holder reads from the fork's
-- parent up to the old fork point, and the superseded run begins inside
-- that inherited history: superseded_from is the rewind point, after
-- which the holder's view is the superseded run (its own events alone
-- are only part of it). Holders written before this version were, in
-- every case but that one, cut at their fork point.

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
ALTER TABLE agent_sessions ADD COLUMN superseded_from INTEGER NOT NULL DEFAULT 0;
UPDATE agent_sessions SET superseded_from = fork_seq WHERE retired = 2;

CREATE TABLE sweep_removals (
    -- 'conversation' (id: its id) or 'agent_session' (id: its row's pk)
    kind          TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    tenant        TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) STRICT;

-- +goose Down
DROP TABLE sweep_removals;
ALTER TABLE agent_sessions DROP COLUMN superseded_from;
