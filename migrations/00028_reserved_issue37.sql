-- Reserved: version 28 belongs to another branch of issue 37 (the lead
-- assigns it). This no-op step keeps the versions 1..n without gaps on
-- this branch, below its migration 31; drop it at merge (two steps of one
-- version fail the migrations test).

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
