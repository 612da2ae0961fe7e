-- PostgreSQL's step of this number bounds the pending list of its trigram
-- index (gin_pending_list_limit), so that its search plans and their
-- speed do not depend on when the list was last flushed.
-- SQLite's search index is FTS5: nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
