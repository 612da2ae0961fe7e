-- The full-text index keeps which documents hold a trigram, not where in them.
--
-- search_fts (migration 14) stored every trigram's positions in every
-- document (FTS5's detail=full), so that a term of three or more
-- characters matched as a phrase of its trigrams. Measured on runner
-- replies of ~1 KiB (BenchmarkFTSOptions in sqlstore): 2,953 bytes of
-- index and 221 µs of the indexer's CPU per document; with detail=column,
-- 1,669 bytes and 171 µs, a fold that runs beside the writers on the same
-- cores. (detail=none, 496 bytes and 111 µs, was weighed and refused: its
-- merges do not drop every deleted document's entries, so an index of
-- deleted documents kept 38% of its pages after a full merge, and a size
-- budget could not free them; conformance SizeBudgetStopsUnderBudget
-- fails with it.) FTS5 refuses phrase queries without positions, so a
-- term now matches the documents holding all of its trigrams, and the
-- search keeps those that hold the term itself (sessionstore_contains,
-- ignoring case as the snippet does): the same hits, ranked by bm25 over
-- the term's trigrams.
--
-- The index is rebuilt from search_docs in this step: on a large store
-- the upgrade takes that long once (a few seconds per 100,000 documents).
-- PostgreSQL's step of this number changes nothing.

-- +goose Up
DROP TABLE search_fts;
CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content = 'search_docs', content_rowid = 'doc', tokenize = 'trigram', detail = column
);
INSERT INTO search_fts (search_fts) VALUES ('rebuild');

-- +goose Down
DROP TABLE search_fts;
CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content = 'search_docs', content_rowid = 'doc', tokenize = 'trigram'
);
INSERT INTO search_fts (search_fts) VALUES ('rebuild');
