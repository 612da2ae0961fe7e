package pgstore

import "testing"

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                              "SELECT 1",
		"a = ? AND b = ?":                       "a = $1 AND b = $2",
		"x = ?2 OR y = ?1 OR z = ?12":           "x = $2 OR y = $1 OR z = $12",
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)": "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
		"WHERE id = ?\nLIMIT ?":                 "WHERE id = $1\nLIMIT $2",
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
		if got := rebind(in); got != want { // cached
			t.Errorf("cached rebind(%q) = %q", in, got)
		}
	}
}
