package pgstore_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
)

// TestGovRowRawAsScan: the governed rows a Use returns are decoded from
// their wire values (govRowRaw) rather than with pgx's Scan; on rows of
// the schema's governed_sessions whose every column holds a value of its
// own (so that two columns swapped would show), with empty arrays, empty
// strings, empty elements, quotes, commas, braces, backslashes and
// non-ASCII text, both decode the same row, field by field, and the raw
// decoding is the one taken (the extended protocol sends the arrays and
// numbers in binary). Over the simple protocol, whose values are text, the
// raw decoding declines and Scan decodes.
func TestGovRowRawAsScan(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	pool, err := pgxpool.New(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := pgstore.OpenPool(ctx, pool, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	insert := `INSERT INTO governed_sessions (id, agent_id, delegation_chain, declared_intent, authorized_tools,
		authorized_credentials, time_limit_ms, call_budget, calls_made, rate_limit, rate_window_ms,
		rate_window_start_ms, rate_window_calls, sensitivity, status, created_at_ms, expires_at_ms, tenant)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, '')`
	for _, r := range [][]any{
		{"s-1", "agent-1", []string{"parent", "grand"}, "intent one", []string{"read_file", "write_file"},
			[]string{"cred-a"}, int64(60000), int64(100), int64(7), int64(5), int64(1000), int64(1764000000123), int64(3),
			"high", "active", int64(1764000000001), int64(1764000060001)},
		{"s-2", "", []string{}, "", []string{}, []string{}, int64(1000), int64(0), int64(0), int64(0), int64(1),
			int64(-5), int64(0), "", "closed", int64(0), int64(-1)},
		{"s-3 ünï 名前", "agent \"q\", {b} \\ x", []string{"", "a,b", "{c}", "\"d\"", "e\\f", "NULL"}, "día 😀",
			[]string{"*"}, []string{"", ""}, int64(1 << 40), int64(1 << 50), int64(1 << 49), int64(1<<62 + 3), int64(77),
			int64(1<<62 + 5), int64(1<<48 + 9), "low", "expired", int64(1<<52 + 11), int64(1<<53 + 13)},
	} {
		if _, err := pool.Exec(ctx, insert, r...); err != nil {
			t.Fatal(err)
		}
	}
	query := `SELECT ` + pgstore.GovColumns + ` FROM governed_sessions ORDER BY id`
	check := func(mode pgx.QueryExecMode, wantRaw bool) {
		t.Helper()
		rows, err := pool.Query(ctx, query, mode)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
			raw, scanned, rawRow, scannedRow, ok, err := pgstore.GovRowDecodings(rows)
			if err != nil {
				t.Fatalf("row %d: %v", n, err)
			}
			if ok != wantRaw {
				t.Fatalf("row %d (%s): raw decoding taken %v, want %v", n, scanned.ID, ok, wantRaw)
			}
			if !ok {
				continue
			}
			if !reflect.DeepEqual(raw, scanned) {
				t.Errorf("row %d: raw decoding\n%+v\nwant (Scan)\n%+v", n, raw, scanned)
			}
			// The rows themselves, but nil and empty arrays alike
			// (session() makes both empty).
			rv, sv := reflect.ValueOf(rawRow), reflect.ValueOf(scannedRow)
			for i := range rv.NumField() {
				a, b := rv.Field(i), sv.Field(i)
				if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
					continue
				}
				if !reflect.DeepEqual(a.Interface(), b.Interface()) {
					t.Errorf("row %d, field %s: %#v, want %#v", n, rv.Type().Field(i).Name, a.Interface(), b.Interface())
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Fatalf("%d rows, want 3", n)
		}
	}
	check(pgx.QueryExecModeCacheStatement, true)
	check(pgx.QueryExecModeSimpleProtocol, false)
}
