-- PostgreSQL's step of this number sets the planner's cost of its
-- trigram function (sessionstore_trigrams) to what it costs, so that its
-- searches take the trigram index once the table has statistics.
-- SQLite's search index is FTS5: nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
