package sqlstore_test

// Damaged and foreign files: Open refuses them with a clear error and
// never modifies them (every byte of every file in the directory is
// compared before and after, and no file appears).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// realStoreBytes builds a closed session store with some data (several
// pages) and returns its bytes.
func realStoreBytes(t *testing.T, sessions int) []byte {
	t.Helper()
	path := sqlstore.FreshDBPath(t, "real.db")
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sessions {
		req := longSession(fmt.Sprintf("session-%04d", i), 10)
		req.DeclaredIntent = strings.Repeat("i", 500)
		if _, err := st.Governance().Create(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// foreignDB builds a database of another application with stmts.
func foreignDB(t *testing.T, stmts ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "foreign.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// damagedCase is a file (and optional side files) that Open must refuse
// with one of the errors in want.
type damagedCase struct {
	name  string
	files map[string][]byte // by suffix of the database path ("" = the file)
	want  []error
	// mayCreate lists side files SQLite may create to read the case: a
	// read-only connection to a database with a WAL needs the -shm index.
	mayCreate []string
}

func damagedCases(t *testing.T) []damagedCase {
	real := realStoreBytes(t, 60)
	const page = 4096
	if len(real) < 8*page {
		t.Fatalf("real store is only %d bytes", len(real))
	}
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	notStore := []error{store.ErrNotSessionStore}
	damaged := []error{store.ErrNotSessionStore, store.ErrCorrupt}
	withMagic := append([]byte("SQLite format 3\x00"), randomBytes(2, 3*page-16)...)
	headerOnly := append(append([]byte{}, real[:page]...), randomBytes(3, len(real)-page)...)
	cases := []damagedCase{
		{"empty", map[string][]byte{"": {}}, notStore, nil},
		{"random-bytes", map[string][]byte{"": randomBytes(1, 3*page)}, notStore, nil},
		{"random-short", map[string][]byte{"": randomBytes(4, 37)}, notStore, nil},
		{"text-file", map[string][]byte{"": []byte("just some notes\n")}, notStore, nil},
		{"sqlite-magic-then-garbage", map[string][]byte{"": withMagic}, damaged, nil},
		{"real-header-garbage-pages", map[string][]byte{"": headerOnly}, damaged, nil},
		{"foreign-app", map[string][]byte{"": foreignDB(t,
			"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
			"INSERT INTO users (name) VALUES ('ada'), ('bob')")}, notStore, nil},
		{"foreign-app-using-goose", map[string][]byte{"": foreignDB(t,
			"CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')))",
			"INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1), (1, 1)",
			"CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT)")}, notStore, nil},
		{"newer-schema", map[string][]byte{"": foreignDBFrom(t, real,
			fmt.Sprintf("INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, 1)", latest+1))},
			[]error{store.ErrSchemaTooNew}, nil},
	}
	db, wal := walCrashImage(t, real, fmt.Sprintf("INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, 1)", latest+1))
	cases = append(cases, damagedCase{"newer-schema-in-wal", map[string][]byte{"": db, "-wal": wal},
		[]error{store.ErrSchemaTooNew}, []string{"-shm"}})
	for _, cut := range []int{50, 100, page / 2, page, 3 * page, len(real) / 2, len(real) - page, len(real) - 100} {
		cases = append(cases, damagedCase{fmt.Sprintf("truncated-%d-of-%d", cut, len(real)), map[string][]byte{"": real[:cut]}, damaged, nil})
	}
	return cases
}

// walCrashImage applies stmts to a copy of db in WAL mode without
// checkpointing and returns the database and WAL files as a crash would
// leave them (copied while the connection is still open).
func walCrashImage(t *testing.T, db []byte, stmts ...string) (main, wal []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crash.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if main, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if wal, err = os.ReadFile(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	if len(wal) == 0 {
		t.Fatal("the WAL is empty")
	}
	return main, wal
}

// foreignDBFrom applies stmts to a copy of db (a closed database).
func foreignDBFrom(t *testing.T, db []byte, stmts ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	d.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDamagedFilesRefused(t *testing.T) {
	for _, c := range damagedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sessions.db")
			for suffix, b := range c.files {
				if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := dirFiles(t, dir)
			st, err := sqlstore.Open(context.Background(), path)
			if err == nil {
				st.Close()
				t.Fatalf("Open accepted a %s file", c.name)
			}
			ok := false
			for _, w := range c.want {
				ok = ok || errors.Is(err, w)
			}
			if !ok {
				t.Fatalf("Open: %v; want one of %v", err, c.want)
			}
			if !clearError(err) {
				t.Fatalf("error %q does not start with a store error", err)
			}
			t.Logf("refused: %v", err)
			var tooNew *store.SchemaTooNewError
			if errors.As(err, &tooNew) {
				latest, _ := migrations.Latest()
				if tooNew.DatabaseVersion != latest+1 || tooNew.BinaryVersion != latest {
					t.Fatalf("SchemaTooNewError %+v, want database %d, binary %d", tooNew, latest+1, latest)
				}
			}
			after := dirFiles(t, dir)
			for name, b := range before {
				if a, ok := after[name]; !ok || a != b {
					t.Errorf("%s was modified or removed (%d bytes before, %d after)", name, len(b), len(a))
				}
			}
			for name := range after {
				if _, ok := before[name]; !ok && !slices.ContainsFunc(c.mayCreate, func(suf string) bool { return name == filepath.Base(path)+suf }) {
					t.Errorf("Open left a new file %s", name)
				}
			}
		})
	}
}

// clearError reports whether err's text begins with a store sentinel's
// text, so a log line says what kind of failure it is.
func clearError(err error) bool {
	for _, s := range []error{store.ErrNotSessionStore, store.ErrCorrupt, store.ErrSchemaTooNew, store.ErrReadOnly, store.ErrInvalidInput} {
		if strings.HasPrefix(err.Error(), s.Error()) || strings.HasPrefix(err.Error(), "sqlstore: "+s.Error()) {
			return true
		}
	}
	return false
}

// TestDamagedPageReportsCorrupt damages the b-tree root of the sessions
// table while the schema and version pages stay intact: Open cannot see it
// without reading everything (PRAGMA integrity_check would, at a cost
// proportional to the file), so the damage is reported when touched —
// reads and writes return ErrCorrupt, never wrong data or a panic.
func TestDamagedPageReportsCorrupt(t *testing.T) {
	real := realStoreBytes(t, 60)
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, real, 0o600); err != nil {
		t.Fatal(err)
	}
	var root int
	if err := openSQL(t, path, true).QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'governed_sessions'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	const page = 4096
	copy(real[(root-1)*page:root*page], randomBytes(9, page))
	if err := os.WriteFile(path, real, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		// Refusing at open would be fine too.
		t.Logf("refused at open: %v", err)
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Open: %v, want ErrCorrupt", err)
		}
		return
	}
	defer st.Close()
	gov := st.Governance()
	if _, err := gov.Get(ctx, "session-0001"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Get on a damaged page: %v, want ErrCorrupt", err)
	}
	if _, err := gov.List(ctx, store.ListFilter{}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("List on a damaged page: %v, want ErrCorrupt", err)
	}
	if _, err := gov.Use(ctx, store.UseRequest{SessionID: "session-0001", Tools: []string{"t"}}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Use on a damaged page: %v, want ErrCorrupt", err)
	}
	if _, err := gov.Create(ctx, longSession("new", 1)); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Create on a damaged page: %v, want ErrCorrupt", err)
	}
}
