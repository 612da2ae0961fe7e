-- The planner counts sessionstore_trigrams (migration 14) at its cost.
--
-- The function was declared with PostgreSQL's default cost for a SQL
-- function (100 operator costs), what the planner counts for
-- to_tsvector(), while it takes about 60 times as long (measured on
-- ~1 KiB bodies, the corpus of BenchmarkSearchCommonTerm, on a loaded
-- machine: 9.5 ms a call against 165 us for to_tsvector() and 10 us for
-- the search's strpos() of lower(), which the planner counts 2). With
-- statistics (ANALYZE, which autovacuum runs) the planner then answered
-- searches by computing the trigrams of rows one by one: a search of a
-- common term filtered by kind read the key index and checked the
-- trigrams of every document of that kind (TestSearchPlansAfterAnalyze
-- in pgstore), and the query of the candidates' keys of the newest-first
-- steps (search_large.go, off on PostgreSQL since) a sequential scan of
-- every row (18 s on 3,000 documents).
--
-- The cost is 100,000 operator costs (250 page reads): more than the
-- call costs by how the planner counts to_tsvector(), less by how it
-- counts a page read. The planner counts the function for each candidate
-- of the trigram index too (as if each were checked again), so what
-- makes it take the index is the candidates it expects the index to
-- spare; at 5,000 the query of the candidates' keys, filtered by kind,
-- still read the key index alone. At 100,000 every statement of that
-- test takes the trigram index, with the key or user index in a
-- BitmapAnd where a filter has one.
--
-- Counted that way, the plan of a common term on a large index passes
-- jit_above_cost: the search's read transaction turns JIT off (pgstore's
-- Dialect.SearchSetup); no statement outside a search uses the function.
-- SQLite's step of this number does nothing.

-- +goose Up
ALTER FUNCTION sessionstore_trigrams(text) COST 100000;

-- +goose Down
ALTER FUNCTION sessionstore_trigrams(text) COST 100;
