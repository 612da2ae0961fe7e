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

-- +goose Up
ALTER TABLE agent_sessions ADD COLUMN superseded_from INTEGER NOT NULL DEFAULT 0;
UPDATE agent_sessions SET superseded_from = fork_seq WHERE retired = 2;

-- +goose Down
ALTER TABLE agent_sessions DROP COLUMN superseded_from;
