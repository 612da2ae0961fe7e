-- SQLite's step of this number takes an agent event's key into the search
-- queue after the append (from a position in the events' rowids) rather
-- than by trigger in the append. PostgreSQL keeps the queue trigger: a
-- sequence's values commit out of order, so no position tells which
-- events are not yet queued. Nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
