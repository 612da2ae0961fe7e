-- The search index is pg_trgm's trigram index where the extension can be
-- used, and stays sessionstore_trigrams' index (migration 14) where not.
--
-- Both index the trigrams of each document's body. sessionstore_trigrams
-- computes them in SQL: about 1.5 ms for ~780 bytes, so that the fold of
-- 3,000 such documents took 4.3 to 5.1 s, where pg_trgm's GIN operator
-- class (gin_trgm_ops, in C) took 0.51 to 0.57 s (psql on the test
-- server, load 0.9). And pg_trgm's check of a row is LIKE, which the
-- planner counts as the cheap operator it is: a plan that checks the rows
-- of a filter one by one no longer costs milliseconds a row, so the plans
-- no longer hang on the function's cost (migration 37) or on the pending
-- list (migration 41).
--
-- The index is over lower(body), and a search asks for a term with
-- lower(d.body) LIKE lower('%term%') (the term's % _ and \ escaped): the
-- same test as strpos(lower(d.body), lower(term)) > 0, which decides what
-- is found on the function's index, so on pg_trgm's the LIKE replaces it
-- (checking both folded each candidate's body twice). Not ILIKE over
-- body: pg_trgm folds the case of each character alone, lower() of a
-- whole text (ICU) in context, so an index over body missed 'ΣΟΦΟΣ' for
-- the term 'σοφος', whose last letter is lower()'s final sigma
-- (TestSearchIndexTrigramExtension). Over lower(body) both sides are
-- folded by lower() first. pgstore picks its statements by the index it
-- finds at Open.
--
-- pg_trgm's match is lossy: the index's candidates are checked again
-- (lower(body) LIKE) before any other condition, where sessionstore_trigrams'
-- containment needed no second check. A common term searched in one
-- session checked every document that holds it (10,000 documents: 65 to
-- 98 ms against 15 ms). search_docs_session indexes the session filter's
-- column, so that such a search reads the session's documents (6 ms; 12 ms
-- with the function's index, in a BitmapAnd).
--
-- Where the extension lives: one per database, in one schema.
-- - Installed already (by a DBA, in any schema): this step uses it there.
-- - Not installed: this step creates it in a schema of its own,
--   sessionstore_trgm, so that dropping a store's schema never drops it
--   from under another store's index. pg_trgm is a trusted extension
--   (PostgreSQL 13 and later): a role with CREATE on the database may
--   create it.
-- - Where it cannot be created (no CREATE on the database, no extension
--   on the server, an older server) or where the session that migrates
--   sets sessionstore.trigram_index to 'function' (for a DBA who wants no
--   extension; a connection string can carry it), nothing changes and a
--   notice says why.
-- SQLite's step of this number does nothing.

-- +goose Up
CREATE INDEX search_docs_session ON search_docs (session_id);

-- +goose StatementBegin
DO $$
DECLARE
    ns name;
BEGIN
    IF current_setting('sessionstore.trigram_index', true) = 'function' THEN
        RAISE NOTICE 'sessionstore: sessionstore.trigram_index is function: search keeps sessionstore_trigrams';
        RETURN;
    END IF;
    SELECT n.nspname INTO ns FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
    IF ns IS NULL THEN
        BEGIN
            CREATE SCHEMA IF NOT EXISTS sessionstore_trgm;
            CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA sessionstore_trgm;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE 'sessionstore: pg_trgm not created (%): search keeps sessionstore_trigrams', SQLERRM;
        END;
        -- Another store's migration may have created it meanwhile.
        SELECT n.nspname INTO ns FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
            WHERE e.extname = 'pg_trgm';
        IF ns IS NULL THEN
            RETURN;
        END IF;
    END IF;
    EXECUTE format('CREATE INDEX search_docs_trgm ON search_docs USING gin (lower(body) %I.gin_trgm_ops) WITH (gin_pending_list_limit = 1024)', ns);
    DROP INDEX search_docs_trigrams;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX search_docs_session;

-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('search_docs_trgm') IS NOT NULL THEN
        DROP INDEX search_docs_trgm;
        CREATE INDEX search_docs_trigrams ON search_docs USING gin (sessionstore_trigrams(body)) WITH (gin_pending_list_limit = 1024);
    END IF;
END
$$;
-- +goose StatementEnd
