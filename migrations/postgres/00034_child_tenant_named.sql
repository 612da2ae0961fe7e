-- SQLite's step of this number drops the triggers that copied an agent
-- session's tenant into its events, session state and state log: every
-- INSERT names it. PostgreSQL's child rows take the tenant from the
-- transaction's setting (migration 17's column default); nothing changes
-- here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
