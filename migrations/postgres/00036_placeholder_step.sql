-- Placeholder for step 36, which another branch adds (an index of the
-- search documents by time on SQLite, nothing on PostgreSQL): it keeps
-- the versions of this branch 1..n without a gap. Dropped at merge.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
