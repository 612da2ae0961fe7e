package migrations

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"
)

// recorder is a database/sql driver that runs nothing: it records the
// statements executed on it, and BEGIN/COMMIT/ROLLBACK for transactions,
// so that a goose provider over it shows what goose would run.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) Connect(context.Context) (driver.Conn, error) { return recConn{r}, nil }
func (r *recorder) Driver() driver.Driver                        { return nil }

type recConn struct{ r *recorder }

func (c recConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("recorder: no Prepare") }
func (c recConn) Close() error                        { return nil }
func (c recConn) Begin() (driver.Tx, error)           { c.r.add("BEGIN"); return recTx(c), nil }
func (c recConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return c.Begin()
}
func (c recConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		return nil, errors.New("recorder: unexpected arguments")
	}
	c.r.add(query)
	return driver.RowsAffected(0), nil
}

type recTx recConn

func (t recTx) Commit() error   { t.r.add("COMMIT"); return nil }
func (t recTx) Rollback() error { t.r.add("ROLLBACK"); return nil }

// gooseRun returns what goose's own provider runs for the migration file
// name of fsys in one direction: the statements between BEGIN and COMMIT.
func gooseRun(t *testing.T, fsys fs.FS, name string, up bool) ([]string, error) {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	db := sql.OpenDB(rec)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fstest.MapFS{name: {Data: b}},
		goose.WithDisableGlobalRegistry(true), goose.WithDisableVersioning(true))
	if err != nil {
		t.Fatal(err)
	}
	if up {
		_, err = p.Up(context.Background())
	} else {
		_, err = p.DownTo(context.Background(), 0)
	}
	if err != nil {
		return nil, err
	}
	if len(rec.log) < 2 || rec.log[0] != "BEGIN" || rec.log[len(rec.log)-1] != "COMMIT" ||
		slices.Contains(rec.log[1:len(rec.log)-1], "BEGIN") {
		t.Fatalf("%s: goose ran %q, want one transaction", name, rec.log)
	}
	return rec.log[1 : len(rec.log)-1], nil
}

// split must return, for every embedded migration of both engines, the
// statements goose's own parser returns (which goose runs when a provider
// reads the file): the providers of NewSQLiteUpgradeProvider and
// NewPostgresUpgradeProvider run what those of NewSQLiteProvider and
// NewPostgresProvider run.
func TestSplitMatchesGoose(t *testing.T) {
	for _, d := range []struct {
		name string
		fsys fs.FS
	}{{"sqlite", SQLite()}, {"postgres", Postgres()}} {
		names, err := fs.Glob(d.fsys, "*.sql")
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: %v %v", d.name, names, err)
		}
		for _, name := range names {
			b, _ := fs.ReadFile(d.fsys, name)
			up, down, err := split(string(b))
			if err != nil {
				t.Errorf("%s/%s: %v", d.name, name, err)
				continue
			}
			gUp, err := gooseRun(t, d.fsys, name, true)
			if err != nil {
				t.Fatalf("%s/%s up: %v", d.name, name, err)
			}
			gDown, err := gooseRun(t, d.fsys, name, false)
			if err != nil {
				t.Fatalf("%s/%s down: %v", d.name, name, err)
			}
			if len(up) == 0 || !slices.Equal(up, gUp) {
				t.Errorf("%s/%s: split's up statements\n%q\ngoose's\n%q", d.name, name, up, gUp)
			}
			if !slices.Equal(down, gDown) {
				t.Errorf("%s/%s: split's down statements\n%q\ngoose's\n%q", d.name, name, down, gDown)
			}
		}
	}
}

// The corners of goose's format that the embedded files do not (yet)
// exercise: split agrees with goose where goose accepts a file and
// refuses what goose refuses, and refuses the annotations it does not
// implement.
func TestSplitCorners(t *testing.T) {
	agree := map[string]string{
		"trailing comment":       "-- +goose Up\nCREATE TABLE a (x int); -- the table\n-- +goose Down\nDROP TABLE a;\n",
		"comment mid-stmt":       "-- +goose Up\nCREATE TABLE a (\n  -- a column\n  x int\n);\n",
		"semicolon in a comment": "-- +goose Up\nCREATE TABLE a ( -- ;\n x int);\n",
		"mixed case":             "-- +goose up\nCREATE TABLE a (x int);\n--  +GOOSE   down\nDROP TABLE a;",
		"crlf":                   "-- +goose Up\r\nCREATE TABLE a (x int);\r\n-- +goose Down\r\nDROP TABLE a;\r\n",
		"no down":                "-- leading words\n\n-- +goose Up\nCREATE TABLE a (x int);\nCREATE TABLE b (y int);\n",
		"empty down":             "-- +goose Up\nCREATE TABLE a (x int);\n-- +goose Down\n",
		"block":                  "-- +goose Up\n-- +goose StatementBegin\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\nEND;\n\n-- +goose StatementEnd\n-- +goose Down\n-- +goose StatementBegin\nDROP TRIGGER t;\n-- +goose StatementEnd\n",
		"open text then block":   "-- +goose Up\nCREATE TABLE a\n-- +goose StatementBegin\n(x int);\n-- +goose StatementEnd\n",
		"space-only first line":  "-- +goose Up\n   \n-- kept\nCREATE TABLE a (x int);\n",
	}
	for name, text := range agree {
		fsys := fstest.MapFS{"00001_x.sql": {Data: []byte(text)}}
		up, down, err := split(text)
		if err != nil {
			t.Errorf("%s: split: %v", name, err)
			continue
		}
		gUp, err := gooseRun(t, fsys, "00001_x.sql", true)
		if err != nil {
			t.Fatalf("%s: goose up: %v", name, err)
		}
		gDown, err := gooseRun(t, fsys, "00001_x.sql", false)
		if err != nil {
			t.Fatalf("%s: goose down: %v", name, err)
		}
		if !slices.Equal(up, gUp) || !slices.Equal(down, gDown) {
			t.Errorf("%s: split up %q down %q; goose up %q down %q", name, up, down, gUp, gDown)
		}
	}
	refusedByBoth := map[string]string{
		"no up":               "CREATE TABLE a (x int);\n",
		"missing semicolon":   "-- +goose Up\nCREATE TABLE a (x int)\n",
		"unclosed up at down": "-- +goose Up\nCREATE TABLE a (x int)\n-- +goose Down\nDROP TABLE a;\n",
		"unclosed block":      "-- +goose Up\n-- +goose StatementBegin\nCREATE TABLE a (x int);\n",
		"end without begin":   "-- +goose Up\nCREATE TABLE a (x int);\n-- +goose StatementEnd\n",
		"two ups":             "-- +goose Up\nCREATE TABLE a (x int);\n-- +goose Up\n",
		"indented annotation": "-- +goose Up\nCREATE TABLE a (x int);\n  -- +goose Down\nDROP TABLE a;\n",
		"unknown annotation":  "-- +goose Up\n-- +goose Sideways\nCREATE TABLE a (x int);\n",
		"down before up":      "-- +goose Down\nDROP TABLE a;\n-- +goose Up\nCREATE TABLE a (x int);\n",
	}
	for name, text := range refusedByBoth {
		if _, _, err := split(text); err == nil {
			t.Errorf("%s: split accepted it", name)
		}
		fsys := fstest.MapFS{"00001_x.sql": {Data: []byte(text)}}
		_, errUp := gooseRun(t, fsys, "00001_x.sql", true)
		_, errDown := gooseRun(t, fsys, "00001_x.sql", false)
		if errUp == nil && errDown == nil {
			t.Errorf("%s: goose accepted it: not a corner where the two must agree", name)
		}
	}
	for _, text := range []string{
		"-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY i ON a (x);\n",
		"-- +goose Up\n-- +goose ENVSUB ON\nCREATE TABLE ${T} (x int);\n",
		"-- +goose Up\n-- +goose StatementBegin\n-- +goose StatementEnd\nCREATE TABLE a (x int);\n",
	} {
		if _, _, err := split(text); err == nil || !strings.Contains(err.Error(), "annotation") && !strings.Contains(err.Error(), "empty") {
			t.Errorf("split(%q) = %v, want a refusal", text, err)
		}
	}
}
