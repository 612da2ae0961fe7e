-- The planner counts sessionstore_trigrams (migration 14) at its cost.
--
-- The function was declared with PostgreSQL's default cost for a SQL
-- function (100 operator costs), about what to_tsvector() of a ~1 KiB
-- body costs, while it costs about 60 times that (measured on the corpus
-- of BenchmarkSearchCommonTerm, on a loaded machine: 9.5 ms a call
-- against 165 us for to_tsvector() and 10 us for the search's strpos()
-- of lower(), which the planner counts 100 and 2). With statistics
-- (ANALYZE, which autovacuum runs), the planner then answered some
-- searches by computing the trigrams of rows one by one: a search
-- filtered by kind, through the key index, for every document of that
-- kind (TestSearchPlansAfterAnalyze in pgstore), and a query of the
-- candidates' keys with a sequential scan (18 s on 3,000 documents).
-- The cost is now 100,000 operator costs (250 of a page's reads): by how
-- the planner counts a page read, a call costs more than that, by how it
-- counts to_tsvector() less; at 5,000 the query of the candidates' keys
-- of a search newest first filtered by kind (search_large.go) still read
-- the key index and computed the trigrams of each of its rows, as the
-- planner counts the function for each candidate of the trigram index
-- too (see below) and saw too little gain in a BitmapAnd of both
-- indexes. At
-- 100,000 every search statement of that test takes the trigram index,
-- with the key or user index in a BitmapAnd where a filter has one.
--
-- The plan of a search counts the function for every candidate the
-- index finds (as if each were checked again): the estimate of a common
-- term passes jit_above_cost, so the search's read transaction turns JIT
-- off (pgstore's Dialect.SearchSetup); no other statement uses the
-- function. SQLite's step of this number does nothing.

-- +goose Up
ALTER FUNCTION sessionstore_trigrams(text) COST 100000;

-- +goose Down
ALTER FUNCTION sessionstore_trigrams(text) COST 100;
