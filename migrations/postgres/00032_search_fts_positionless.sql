-- SQLite's step of this number rebuilds its FTS5 index without trigram
-- positions (detail=column). PostgreSQL's trigram index (a GIN index over
-- sessionstore_trigrams) holds no positions already. Nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
