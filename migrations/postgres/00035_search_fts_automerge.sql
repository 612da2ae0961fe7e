-- SQLite's step of this number sets its FTS5 index's automerge to 8 (the
-- segments it merges at a time, in the fold's own transaction).
-- PostgreSQL's search index is a GIN index over trigrams: nothing changes
-- here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
