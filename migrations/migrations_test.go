package migrations

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// Both engines must have the same schema steps under the same numbers: a
// version number names one schema, whichever the backend.
func TestDialectsHaveTheSameVersions(t *testing.T) {
	lite, err := Versions(SQLite())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := Versions(Postgres())
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) == 0 || !slices.Equal(lite, pg) {
		t.Fatalf("SQLite versions %v, PostgreSQL versions %v: must be equal and not empty", lite, pg)
	}
	// Versions start at 1 and grow. Gaps are allowed while branches that
	// each own a range of numbers are merged (the lead renumbers them).
	for i, v := range lite {
		if v < 1 || (i > 0 && v <= lite[i-1]) {
			t.Fatalf("versions %v do not start at 1 and grow", lite)
		}
	}
	if lite[0] != 1 {
		t.Fatalf("versions %v do not start at 1", lite)
	}
	ll, err := Latest()
	if err != nil {
		t.Fatal(err)
	}
	lp, err := LatestPostgres()
	if err != nil {
		t.Fatal(err)
	}
	if ll != lp || ll != lite[len(lite)-1] {
		t.Fatalf("Latest() = %d, LatestPostgres() = %d, want %d", ll, lp, lite[len(lite)-1])
	}
}

// The files of one version describe the same step: same name after the
// number.
func TestDialectsNameStepsAlike(t *testing.T) {
	lite, _ := fs.Glob(SQLite(), "*.sql")
	pg, _ := fs.Glob(Postgres(), "*.sql")
	if !slices.Equal(lite, pg) {
		t.Fatalf("SQLite files %v differ from PostgreSQL files %v", lite, pg)
	}
	for _, name := range pg {
		b, err := fs.ReadFile(Postgres(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "-- +goose Up") || !strings.Contains(string(b), "-- +goose Down") {
			t.Errorf("%s: missing goose Up or Down section", name)
		}
	}
}
