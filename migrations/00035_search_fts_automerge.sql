-- The full-text index merges its segments 8 at a time instead of 4.
--
-- Every fold batch of the indexer (internal/sqlcore/search_fold.go) adds
-- a segment to search_fts, and FTS5 merges segments as it goes, in the
-- fold's own transaction: with automerge=4 (FTS5's default) a document's
-- entries are written again each time four segments of a level become one
-- of the next, about log4(documents / batch) times, so the fold's cost
-- per document grows with the index. With automerge=8 they are written
-- about two thirds as often.
--
-- Measured with BenchmarkFoldGrowth in sqlstore (~1 KiB documents of
-- varied words, the store's indexer, synchronous=NORMAL; directional, on
-- a loaded machine, see docs/search.md): over the growth to 10,000 to
-- 50,000 documents indexed, the fold's pages written per document 8-27%
-- fewer and its CPU 3-19% lower (amortized over every merge of the
-- growth; one window of a few thousand documents can catch a large merge
-- or miss it), the largest fold transaction no larger, the index 12
-- segments against 7-12, and a search of a rare or a common term as fast
-- within the noise. crisismerge stays at FTS5's 16: raised to 32 beside
-- automerge=8 it wrote the same pages and left up to 24 segments.
-- automerge=16 saved more CPU (19-30%) but, with crisismerge at 16,
-- merged a whole level in one fold (5,386 pages at 30,000 documents,
-- holding the writer), and with crisismerge at 64 left 32-34 segments and
-- a rare term's search took about twice as long; refused for that.
--
-- The setting lives in the index's configuration (search_fts_config), so
-- a rebuild keeps it. The size budget's compaction runs 'merge' commands
-- of its own; they merge whatever segments there are. PostgreSQL's index
-- is a GIN index: nothing changes there.

-- +goose Up
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 8);

-- +goose Down
-- FTS5's default through its own command (it tells the connections that
-- cached the setting to read it again), then without the row, as before
-- this step.
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 4);
DELETE FROM search_fts_config WHERE k = 'automerge';
