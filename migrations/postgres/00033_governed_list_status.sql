-- SQLite's step of this number puts the status and the expiry in the
-- index its list of governed sessions walks, so that a rare status is
-- tested on the index entries. PostgreSQL's planner has statistics and
-- chooses its own way for each filter. Nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
