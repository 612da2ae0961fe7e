-- The trigram index's pending list holds at most 1 MiB, not 4 MiB.
--
-- A GIN index takes new entries into a pending list, which every search
-- reads whole, and moves them into its tree when the list passes
-- gin_pending_list_limit (4 MiB by default) or when vacuum or
-- autovacuum's ANALYZE runs. The list therefore held anything from
-- nothing to 4 MiB of trigrams, about 2,600 documents of ~1 KiB, and two
-- things moved with it:
--
-- - The plans. The planner counts the list's pages in the index's cost.
--   A search of a common term in messages only (2% of the documents of
--   TestSearchPlansAfterAnalyze in pgstore) took the trigram index with
--   the key index (a BitmapAnd) at cost 7,743 when the fold had left 287
--   pages, and the key index alone at 8,154 with about 460: that plan
--   computes sessionstore_trigrams of every message, milliseconds each.
--   The test failed that way once in CI, whose autovacuum had flushed
--   the list at another point of the fold.
-- - The search's speed, where the list is long. A rare term's search on
--   that corpus took 3.7 to 7.6 ms with 287 pages pending, 2.4 to 3.1 ms
--   with at most 1 MiB (on 10,000 documents, BenchmarkSearchCommonTerm
--   showed no difference beyond its runs' noise).
--
-- With 1 MiB (128 pages) the index's cost stays below about 600 and the
-- plan keeps the trigram index. The fold moves entries to the tree in
-- batches of about 650 documents instead of 2,600: the fold of 1,500
-- documents took 3.5 to 3.6 s with the limit against 3.2 to 4.2 s
-- without it (three runs each, alternated, load about 1). The list left
-- by earlier folds is flushed now.
-- SQLite's step of this number does nothing.

-- +goose Up
ALTER INDEX search_docs_trigrams SET (gin_pending_list_limit = 1024);
SELECT gin_clean_pending_list('search_docs_trigrams'::regclass);

-- +goose Down
ALTER INDEX search_docs_trigrams RESET (gin_pending_list_limit);
