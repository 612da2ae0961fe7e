-- sessionstore_trigrams (migration 14) takes time in proportion to its
-- text's length, not to its square.
--
-- The function cut the lower-cased text with substr(l, i, 3) for each
-- position i. On UTF-8 text substr walks the string from its start to
-- find character i, so a text of n characters cost about n²/2 steps:
-- measured with psql on the test server (load ~1), 6.1 ms for 1 KiB of
-- text, 116 ms for 4 KiB, 1.9 s for 16 KiB, and a 64 KiB message would
-- have held the fold (or a search that folds first) for about 25 s.
-- Now the text is split into its characters once
-- (regexp_split_to_array with an empty pattern), and each character is
-- joined to the next two by lead() over their positions: 1.3 ms, 5.5 ms,
-- 22 ms and 90 ms for the same texts.
--
-- The function returns the same trigrams, as the same sorted array
-- (array_agg DISTINCT of the same strings), for every text: the GIN
-- index built with the old body stays valid and is not rebuilt
-- (TestTrigramsAsBefore compares both bodies on texts of several
-- scripts). The planner's cost of migration 37 stays: the statements
-- that search compute it for the term only, and their plans were chosen
-- with it.
-- SQLite's search index is FTS5: its step of this number does nothing.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_trigrams(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 100000 AS $$
    SELECT coalesce(array_agg(DISTINCT g.g), '{}')
    FROM (SELECT c || lead(c, 1) OVER w || lead(c, 2) OVER w AS g
          FROM unnest(regexp_split_to_array(lower(t), '')) WITH ORDINALITY AS u(c, n)
          WINDOW w AS (ORDER BY n)) AS g
    WHERE g.g IS NOT NULL
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sessionstore_trigrams(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 100000 AS $$
    SELECT coalesce(array_agg(DISTINCT substr(l, i, 3)), '{}')
    FROM (SELECT lower(t) AS l) AS x, generate_series(1, length(x.l) - 2) AS i
$$;
-- +goose StatementEnd
