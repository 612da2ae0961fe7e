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
-- At 5,000 it takes the trigram index for every search statement of that
-- test, combined with the key or user index by a BitmapAnd where a filter
-- has one.
--
-- The plan of a search counts the function for every candidate the
-- index finds (as if each were checked again): on a large index the
-- estimate of a common term passes jit_above_cost, so the search's read
-- transaction turns JIT off (pgstore's Dialect.SearchSetup). SQLite's
-- step of this number does nothing.

-- +goose Up
ALTER FUNCTION sessionstore_trigrams(text) COST 5000;

-- +goose Down
ALTER FUNCTION sessionstore_trigrams(text) COST 100;
