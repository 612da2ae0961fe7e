-- SQLite's step of this number indexes its search documents by tenant and
-- time, which its search newest first walks for a term in most documents.
-- PostgreSQL's search runs its own query whatever the number of
-- candidates (internal/sqlcore/search_large.go, postgresLarge): nothing
-- changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
