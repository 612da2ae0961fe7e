-- Reserved: version 23 is issue 29g's (retention through a tenant
-- handle), written on another branch. This no-op step keeps the
-- versions 1..n without gaps on this branch; drop it when 29g's 00023
-- lands (two steps of one version fail the migrations test).

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
