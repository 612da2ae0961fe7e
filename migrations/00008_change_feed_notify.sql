-- PostgreSQL only: the change feed's notify trigger reads its gate with a
-- cheaper call, and the feed's trigger functions no longer fix a
-- search_path (see postgres/00008_change_feed_notify.sql). SQLite has no
-- notifications and no search paths: this step changes nothing here, and
-- exists because every version is one schema step on both engines.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
