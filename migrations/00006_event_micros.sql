-- Event timestamps keep microseconds (ADK keeps microseconds): the column
-- ts_ms becomes ts_us and the stored millisecond values are scaled, so an
-- existing database reads every event back at the same instant. The time
-- and invocation indexes of the event log go: a time window or an
-- invocation is read on the (session, seq) index, within the session's
-- events, and every append maintains two index entries fewer.

-- +goose Up
DROP INDEX agent_events_ts;
DROP INDEX agent_events_invocation;
ALTER TABLE agent_events RENAME COLUMN ts_ms TO ts_us;
UPDATE agent_events SET ts_us = ts_us * 1000;

-- +goose Down
-- Back to milliseconds, rounding down (also before 1970).
UPDATE agent_events SET ts_us = (ts_us - (((ts_us % 1000) + 1000) % 1000)) / 1000;
ALTER TABLE agent_events RENAME COLUMN ts_us TO ts_ms;
CREATE INDEX agent_events_ts ON agent_events (session_pk, ts_ms);
CREATE INDEX agent_events_invocation ON agent_events (session_pk, invocation_id, seq);
