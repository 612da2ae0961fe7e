-- SQLite's step of this number drops the triggers that copied a
-- conversation's tenant into its child rows and a search document's
-- tenant from its source: every INSERT names it. PostgreSQL's child rows
-- take the tenant from the transaction's setting (migration 17's column
-- default) unless the INSERT names it, as it now does; nothing changes
-- here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
