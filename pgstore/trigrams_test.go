package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
)

// trigramsBefore is sessionstore_trigrams as migration 14 wrote it (one
// substr per position: quadratic on UTF-8 text), under another name.
const trigramsBefore = `CREATE FUNCTION trigrams_before(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT coalesce(array_agg(DISTINCT substr(l, i, 3)), '{}')
    FROM (SELECT lower(t) AS l) AS x, generate_series(1, length(x.l) - 2) AS i
$$`

// TestTrigramsAsBefore: migration 39's sessionstore_trigrams returns,
// for every text, the very array migration 14's returned (the same
// trigrams, in the same order), so that the GIN index built with the old
// body stays valid without a rebuild: short and empty texts, several
// scripts, emoji with joiners, control characters, repeated letters,
// and 2,000 generated texts.
func TestTrigramsAsBefore(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc) // migrates: the function of migration 39
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, trigramsBefore); err != nil {
		t.Fatal(err)
	}
	texts := []string{"", "a", "ab", "abc", "abcd", "Hello World", "aaaaaa", "日本語のテキスト",
		"ÀÉÎõü straße ΣΑΣ ΐ", "👍🏽 emoji 👨‍👩‍👧 x", "tab\tand\nnewline\r", "İstanbul ǅ ﬁ",
		strings.Repeat("the quick brown fox ", 60)}
	for i := range 2000 {
		texts = append(texts, fmt.Sprintf("%x Ünïcödé 漢字 %s", i*7919, strings.Repeat(string(rune('A'+i%50)), i%7)))
	}
	var differ []string
	rows, err := conn.Query(ctx, `SELECT t FROM unnest($1::text[]) AS t
		WHERE sessionstore_trigrams(t) IS DISTINCT FROM trigrams_before(t)`, texts)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		differ = append(differ, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(differ) > 0 {
		t.Errorf("%d of %d texts have other trigrams than before, e.g. %q", len(differ), len(texts), differ[0])
	}
	// The comparison can fail: a body that differs on one text is found.
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS t
		WHERE trigrams_before(t) IS DISTINCT FROM trigrams_before(t || 'x')`, texts[3:6]).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("the comparison found %d of 3 texts changed by a suffix", n)
	}
}
