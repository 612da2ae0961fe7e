// Package walpages names the table or index of every page a SQLite
// write-ahead log holds: what a page budget's pages are (the page-budget
// tests of sqlstore and the adk module's counts, ours and ADK's). It
// imports no SQLite driver, so that a test binary of either driver can use
// it.
package walpages

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Objects counts the frames of the log at walPath per table or index,
// named from SQLite's dbstat table read through db (a connection to the
// log's database). Only the frames of the log's current generation (its
// header's salt) count. Page 1, the database header, is "sqlite_schema";
// in a database in auto-vacuum mode a pointer-map page (where SQLite
// records each page's parent, written as pages are added to the file) is
// "(pointer map)"; another page no object holds (a freelist page) is
// "(free)".
func Objects(ctx context.Context, db *sql.DB, walPath string) (map[string]int, error) {
	b, err := os.ReadFile(walPath)
	if err != nil {
		return nil, err
	}
	if len(b) < 32 {
		return map[string]int{}, nil
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	if pageSize < 512 {
		return nil, fmt.Errorf("walpages: %s: page size %d in the log header", walPath, pageSize)
	}
	salt := string(b[16:24])
	frames := map[int64]int{}
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		h := b[off : off+24]
		if string(h[8:16]) != salt {
			break
		}
		frames[int64(binary.BigEndian.Uint32(h[0:4]))]++
	}
	owner := map[int64]string{}
	rows, err := db.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	if err != nil {
		return nil, fmt.Errorf("walpages: dbstat: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var pgno int64
		if err := rows.Scan(&name, &pgno); err != nil {
			return nil, err
		}
		owner[pgno] = name
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var autoVacuum int
	if err := db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&autoVacuum); err != nil {
		return nil, fmt.Errorf("walpages: auto_vacuum: %w", err)
	}
	// A pointer map page follows page 1 and every usable/5 pages after
	// it (5 bytes an entry); usable is the page less its reserved bytes
	// (the database header's byte 20).
	usable := pageSize
	if head, err := readHeader(strings.TrimSuffix(walPath, "-wal")); err == nil {
		usable -= int(head[20])
	}
	pointerMap := func(pgno int64) bool {
		return autoVacuum != 0 && pgno >= 2 && (pgno-2)%int64(usable/5+1) == 0
	}
	by := map[string]int{}
	for pgno, n := range frames {
		name, ok := owner[pgno]
		switch {
		case ok:
		case pointerMap(pgno):
			name = "(pointer map)"
		default:
			name = "(free)"
		}
		by[name] += n
	}
	return by, nil
}

// readHeader returns the first 100 bytes of the database file at path.
func readHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	return head, nil
}

// Format lists counts per object, most first (then by name), one line
// each, with the counts printed by verb (%d, %.2f, ...).
func Format[N int | float64](by map[string]N, verb string) string {
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if by[names[i]] != by[names[j]] {
			return by[names[i]] > by[names[j]]
		}
		return names[i] < names[j]
	})
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, "  %-40s "+verb+"\n", n, by[n])
	}
	return sb.String()
}
