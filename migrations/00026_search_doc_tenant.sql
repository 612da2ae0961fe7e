-- PostgreSQL only: its search-index triggers now file a document under
-- the tenant of the row they index. SQLite's triggers (migrations 17 and
-- 18) already copy the tenant from the session or conversation row; this
-- step keeps the two dialects' versions the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
