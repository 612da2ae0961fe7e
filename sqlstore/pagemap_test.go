package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// walPagesByObject names the schema object (table or index, from SQLite's
// dbstat table) of each frame in the WAL at path+"-wal", read through raw,
// and returns a line per object with its frames, most first: what a page
// budget's pages are. Pages no object holds (the freelist's) are named
// "(free)", the header page "sqlite_schema".
func walPagesByObject(t *testing.T, path string, raw *sql.DB) string {
	t.Helper()
	b, err := os.ReadFile(path + "-wal")
	if err != nil || len(b) < 32 {
		return ""
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	salt := b[16:24]
	frames := map[int64]int{}
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		h := b[off : off+24]
		if string(h[8:16]) != string(salt) {
			break
		}
		frames[int64(binary.BigEndian.Uint32(h[0:4]))]++
	}
	rows, err := raw.QueryContext(context.Background(), "SELECT name, pageno FROM dbstat")
	if err != nil {
		t.Fatalf("dbstat: %v", err)
	}
	defer rows.Close()
	owner := map[int64]string{}
	for rows.Next() {
		var name string
		var pgno int64
		if err := rows.Scan(&name, &pgno); err != nil {
			t.Fatal(err)
		}
		owner[pgno] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for pgno, n := range frames {
		name, ok := owner[pgno]
		if !ok {
			name = "(free)"
		}
		count[name] += n
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if count[names[i]] != count[names[j]] {
			return count[names[i]] > count[names[j]]
		}
		return names[i] < names[j]
	})
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, "  %-40s %d\n", n, count[n])
	}
	return sb.String()
}
