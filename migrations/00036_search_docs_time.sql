-- An index of a tenant's search documents by time.
--
-- A search newest first (store.SearchByTime) of a term in most documents
-- read every candidate's (doc, at_us) row and sorted them before it could
-- check a body: documents are numbered in fold order, not time order
-- (internal/sqlcore/search_large.go). With this index it walks the
-- tenant's documents newest first, tests each against the full-text
-- index's match, and stops once it has its page.
--
-- (tenant, at_us) is enough: doc is the rowid, which every index entry
-- carries after its columns, so a walk of the index backwards gives
-- at_us DESC, doc DESC, the order of the search and of its cursor. The
-- filters (kind, session, app and user) are left out: each would make
-- every entry, and so every fold of a document, larger, and the walk
-- reads a candidate's row for them only when the match holds.
--
-- The fold pays for it: one more index entry per document it inserts (and
-- per document it deletes); see docs/search.md for the measured cost.
-- PostgreSQL's search runs its own query (migration 36 there is empty).

-- +goose Up
CREATE INDEX search_docs_time ON search_docs (tenant, at_us);

-- +goose Down
DROP INDEX search_docs_time;
