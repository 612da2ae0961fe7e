-- PostgreSQL's step of this number makes its trigram function
-- (sessionstore_trigrams) take time in proportion to its text's length.
-- SQLite's search index is FTS5, whose trigram tokenizer already does:
-- nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
