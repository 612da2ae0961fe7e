-- PostgreSQL only: its upload-content trigger runs with its owner's
-- rights so that row-level security does not hide other tenants' uploads
-- from it. SQLite has no row-level security (its trigger sees every row);
-- this step keeps the two dialects' versions the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
