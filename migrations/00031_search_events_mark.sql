-- An agent event's append queues nothing for the search index.
--
-- Since migration 27 an inserted event queued its key in search_pending
-- by trigger, in the append's transaction: a row on that table's last
-- page, one page in the log on every append (1 of 8.0 pages of an event
-- append with a state delta). On SQLite an event's rowid (agent_events.id)
-- grows with every insert and the file has one writer, so the events not
-- yet taken into the queue are exactly those after a position:
-- search_state.events_mark, the highest id taken. The folder (the
-- background indexer, a search, a check, a reindex) first queues the keys
-- of the events after the mark and moves the mark, in one transaction,
-- then folds the queue as before (internal/sqlcore/search_fold.go); so the
-- position is stored transactionally and an event is neither skipped nor
-- indexed twice. Updates and deletes of events still queue their keys by
-- trigger (they are rare), sealed events are still left to the write path
-- (search_sealed.go), and the other content is queued as before.
--
-- A new rowid is one more than the highest in the table: when a delete
-- removes the events at the top, the mark comes down to the highest id
-- left (search_events_mark_ad), so that an id given again is after it.
--
-- PostgreSQL keeps its queue trigger: a sequence's values commit out of
-- order there (its step of this number changes nothing).

-- +goose Up
ALTER TABLE search_state ADD COLUMN events_mark INTEGER NOT NULL DEFAULT 0;
UPDATE search_state SET events_mark = (SELECT coalesce(max(id), 0) FROM agent_events);
DROP TRIGGER search_queue_events_ai;

-- +goose StatementBegin
CREATE TRIGGER search_events_mark_ad AFTER DELETE ON agent_events
    WHEN OLD.id > (SELECT coalesce(max(id), 0) FROM agent_events) BEGIN
    UPDATE search_state SET events_mark = (SELECT coalesce(max(id), 0) FROM agent_events)
    WHERE events_mark > (SELECT coalesce(max(id), 0) FROM agent_events);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER search_events_mark_ad;
-- The events after the mark go into the queue, as their trigger would
-- have put them.
INSERT INTO search_pending (kind, session_pk, owner, pos, ref)
    SELECT 'event', session_pk, '', seq, '' FROM agent_events
    WHERE id > (SELECT events_mark FROM search_state) AND substr(data, 1, 7) <> 'ssenc1:'
    AND (SELECT enabled FROM search_state) = 1
    ORDER BY id;
-- +goose StatementBegin
CREATE TRIGGER search_queue_events_ai AFTER INSERT ON agent_events
    WHEN substr(NEW.data, 1, 7) <> 'ssenc1:' AND (SELECT enabled FROM search_state) = 1 BEGIN
    INSERT INTO search_pending (kind, session_pk, owner, pos, ref) VALUES ('event', NEW.session_pk, '', NEW.seq, '');
END;
-- +goose StatementEnd
ALTER TABLE search_state DROP COLUMN events_mark;
