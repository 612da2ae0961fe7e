package pgstore

import (
	"database/sql"
	"reflect"
	"testing"
)

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

func TestTagFields(t *testing.T) {
	type inner struct {
		A string `db:"a"`
		B int64  `db:"b"`
	}
	type outer struct {
		inner
		C    []byte `db:"c"`
		Skip string `db:"-"`
		None string
	}
	got := tagFields(reflect.TypeOf(outer{}))
	want := map[string][]int{"a": {0, 0}, "b": {0, 1}, "c": {1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tagFields(outer) = %v, want %v", got, want)
	}
	if m := tagFields(reflect.TypeOf(sql.NullString{})); m != nil {
		t.Fatalf("sql.NullString has no db tags and scans as one value; got %v", m)
	}
	if m := tagFields(reflect.TypeOf(int64(0))); m != nil {
		t.Fatalf("int64 scans as one value; got %v", m)
	}
}
