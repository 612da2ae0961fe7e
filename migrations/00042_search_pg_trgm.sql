-- PostgreSQL's step of this number indexes its search documents with the
-- pg_trgm extension where it can. SQLite's search index is FTS5: nothing
-- changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
