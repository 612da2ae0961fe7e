-- The full-text index merges its segments 8 at a time instead of 4.
--
-- Every fold batch of the indexer (internal/sqlcore/search_fold.go) adds
-- a segment to search_fts, and FTS5 merges segments as it goes, in the
-- fold's own transaction: with automerge=4 (FTS5's default) a document's
-- entries are written again each time four segments of a level become one
-- of the next, about log4(documents / batch) times, so the fold's cost
-- per document grows with the index. With automerge=8 they are written
-- about two thirds as often. crisismerge (FTS5's default 16) is raised to
-- 32 with it, so that a level that fills while its merge is in progress
-- does not merge whole in one fold's transaction; it still bounds the
-- segments of a level.
--
-- Measured with BenchmarkFoldGrowth in sqlstore (~1 KiB documents of
-- varied words, the store's indexer, synchronous=NORMAL; directional, on
-- a loaded machine, see docs/search.md): over the growth from 10,000 to
-- 50,000 documents indexed, the fold's CPU per document 3-19% lower and
-- its pages written 5-27% fewer (amortized over every merge of the
-- growth; one window of a few thousand documents can catch a large merge
-- or miss it), the index 12-24 segments against 7-12, and a search of a
-- rare or a common term as fast within the noise. automerge=16 saved
-- more CPU (19-30%) but left 32-34 segments and a rare term's search
-- took about twice as long; refused for that.
--
-- Both settings live in the index's configuration (search_fts_config),
-- so a rebuild keeps them. The size budget's compaction runs 'merge'
-- commands of its own; they merge whatever segments there are.
-- PostgreSQL's index is a GIN index: nothing changes there.

-- +goose Up
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 8);
INSERT INTO search_fts (search_fts, rank) VALUES ('crisismerge', 32);

-- +goose Down
-- FTS5's defaults through its own commands (they tell the connections
-- that cached the settings to read them again), then without the rows,
-- as before this step.
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 4);
INSERT INTO search_fts (search_fts, rank) VALUES ('crisismerge', 16);
DELETE FROM search_fts_config WHERE k IN ('automerge', 'crisismerge');
