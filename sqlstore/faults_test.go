package sqlstore_test

// Storage faults: SQLite error codes mapped in one place, a full disk
// (SQLite's max_page_count, and a real tmpfs when one can be mounted),
// read-only files and directories.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// Real driver errors, provoked once per kind, so that the mapping and the
// fault sweep use exactly what modernc.org/sqlite returns.

func realBusyErr(t testing.TB) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	a := openSQL(t, path, false)
	ctx := context.Background()
	conn, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (x INTEGER) STRICT"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	b, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Exec("BEGIN IMMEDIATE")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_BUSY {
		t.Fatalf("expected SQLITE_BUSY, got %v", err)
	}
	return err
}

func realFullErr(t testing.TB) error {
	t.Helper()
	db := openSQL(t, filepath.Join(t.TempDir(), "full.db"), false)
	db.SetMaxOpenConns(1) // max_page_count is per connection
	for _, q := range []string{"CREATE TABLE t (b BLOB) STRICT", "PRAGMA max_page_count = 4"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.Exec("INSERT INTO t VALUES (randomblob(100000))")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_FULL {
		t.Fatalf("expected SQLITE_FULL, got %v", err)
	}
	return err
}

func realReadOnlyErr(t testing.TB) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ro.db")
	rw := openSQL(t, path, false)
	if _, err := rw.Exec("CREATE TABLE t (x INTEGER) STRICT"); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	_, err := openSQL(t, path, true).Exec("INSERT INTO t VALUES (1)")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_READONLY {
		t.Fatalf("expected SQLITE_READONLY, got %v", err)
	}
	return err
}

func realConstraintErr(t testing.TB) error {
	t.Helper()
	db := openSQL(t, filepath.Join(t.TempDir(), "c.db"), false)
	if _, err := db.Exec("CREATE TABLE t (x INTEGER NOT NULL CHECK (x >= 0)) STRICT"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("INSERT INTO t VALUES (-1)")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_CONSTRAINT {
		t.Fatalf("expected SQLITE_CONSTRAINT, got %v", err)
	}
	return err
}

// realCorruptErr damages the b-tree pages of a table (the header and the
// schema page stay intact) and reads it.
func realCorruptErr(t testing.TB) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corrupt.db")
	db := openSQL(t, path, false)
	for _, q := range []string{
		"PRAGMA page_size = 4096",
		"CREATE TABLE t (x INTEGER PRIMARY KEY, b BLOB) STRICT",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 200) INSERT INTO t SELECT i, randomblob(200) FROM n",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < len(b); i++ {
		b[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var n int
	err = openSQL(t, path, true).QueryRow("SELECT count(*), sum(length(b)) FROM t").Scan(&n, new(sql.NullInt64))
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_CORRUPT {
		t.Fatalf("expected SQLITE_CORRUPT, got %v", err)
	}
	return err
}

// realIOErr provokes a real disk I/O error: a database whose file is a
// symbolic link to /dev/zero takes writes, but a character device cannot
// be synced, so the commit fails with SQLITE_IOERR_FSYNC (no journal file:
// journal_mode MEMORY).
func realIOErr(t testing.TB) error {
	t.Helper()
	link := filepath.Join(t.TempDir(), "zero.db")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Skipf("no symlink to /dev/zero: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+link+"?_pragma=journal_mode(MEMORY)&_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec("CREATE TABLE t (x INTEGER) STRICT")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_IOERR {
		t.Skipf("expected SQLITE_IOERR from a database on /dev/zero, got %v", err)
	}
	return err
}

func realNotADBErr(t testing.TB) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "junk.db")
	junk := make([]byte, 8192)
	rand.Read(junk)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openSQL(t, path, true).Exec("SELECT * FROM sqlite_schema")
	if sqlstore.SQLiteCode(err) != sqlite3.SQLITE_NOTADB {
		t.Fatalf("expected SQLITE_NOTADB, got %v", err)
	}
	return err
}

// TestMapErrCodes checks the one place where SQLite codes become store
// errors, with real driver errors: the sentinel matches, the driver error
// stays in the chain (for logs), and store errors pass through unchanged.
func TestMapErrCodes(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		sentinel error
	}{
		{"busy", realBusyErr(t), store.ErrBusy},
		{"full", realFullErr(t), store.ErrStorageFull},
		{"readonly", realReadOnlyErr(t), store.ErrReadOnly},
		{"corrupt", realCorruptErr(t), store.ErrCorrupt},
		{"notadb", realNotADBErr(t), store.ErrCorrupt},
		{"constraint", realConstraintErr(t), store.ErrConflict},
		{"io", realIOErr(t), store.ErrIO},
	}
	all := []error{store.ErrBusy, store.ErrStorageFull, store.ErrReadOnly, store.ErrCorrupt, store.ErrConflict, store.ErrIO}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sqlstore.MapErr(c.err)
			if !errors.Is(got, c.sentinel) {
				t.Fatalf("mapErr(%v) = %v, want %v", c.err, got, c.sentinel)
			}
			for _, other := range all {
				if other != c.sentinel && errors.Is(got, other) {
					t.Fatalf("mapErr(%v) also matches %v", c.err, other)
				}
			}
			// Every storage failure, and only a storage failure, matches
			// ErrStorage.
			storage := c.sentinel != store.ErrBusy && c.sentinel != store.ErrConflict
			if errors.Is(got, store.ErrStorage) != storage {
				t.Fatalf("mapErr(%v) matches ErrStorage: %v, want %v", c.err, !storage, storage)
			}
			var se *sqlite.Error
			if !errors.As(got, &se) {
				t.Fatalf("driver error lost from the chain: %v", got)
			}
			if !strings.HasPrefix(got.Error(), c.sentinel.Error()) {
				t.Fatalf("error text %q does not start with %q", got, c.sentinel)
			}
			// Mapping twice changes nothing.
			if again := sqlstore.MapErr(got); again.Error() != got.Error() {
				t.Fatalf("mapping is not idempotent: %q then %q", got, again)
			}
		})
	}
	t.Run("passthrough", func(t *testing.T) {
		if sqlstore.MapErr(nil) != nil {
			t.Fatal("mapErr(nil) != nil")
		}
		nf := &store.NotFoundError{Resource: "session", ID: "x"}
		if got := sqlstore.MapErr(nf); got != error(nf) {
			t.Fatalf("store error changed: %v", got)
		}
		if got := sqlstore.MapErr(errInjectedIO); got != errInjectedIO {
			t.Fatalf("non-SQLite error changed: %v", got)
		}
	})
}

// TestDiskFullMaxPageCount fills the database up to SQLite's page limit
// on the writer's connection: the failing call returns ErrStorageFull and
// writes nothing, earlier data is intact, in-place updates and reads go on,
// and writes work again once space is freed (by deleting data, then by
// raising the limit).
func TestDiskFullMaxPageCount(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.db")
	clock := storetest.NewClock()
	st := openWithClock(t, path, clock)
	gov := st.Governance()
	keep, err := gov.Create(ctx, longSession("keep", 1000))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := gov.Use(ctx, store.UseRequest{SessionID: "keep", Tools: []string{"t"}}); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := st.WriterQueryInt(ctx, "PRAGMA page_count")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriterExec(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	intent := strings.Repeat("x", 3000)
	var created []string
	var fullErr error
	for i := range 1000 {
		req := longSession(fmt.Sprintf("fill-%04d", i), 10)
		req.DeclaredIntent = intent
		_, err := gov.Create(ctx, req)
		if err != nil {
			fullErr = err
			break
		}
		created = append(created, req.ID)
	}
	if fullErr == nil {
		t.Fatal("the database never filled up")
	}
	if !errors.Is(fullErr, store.ErrStorageFull) {
		t.Fatalf("full database: got %v, want ErrStorageFull", fullErr)
	}
	t.Logf("full after %d sessions: %v", len(created), fullErr)
	failed := fmt.Sprintf("fill-%04d", len(created))
	if _, err := gov.Get(ctx, failed); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed create left a row: %v", err)
	}
	// Earlier data is intact and readable; the budget counter still works
	// (an in-place update needs no new page).
	got, err := gov.Get(ctx, "keep")
	if err != nil || got.CallsMade != 3 || got.ID != keep.ID {
		t.Fatalf("keep after full: %+v, %v", got, err)
	}
	for _, id := range created {
		if _, err := gov.Get(ctx, id); err != nil {
			t.Fatalf("session %s acknowledged before the disk filled: %v", id, err)
		}
	}
	if _, err := gov.Use(ctx, store.UseRequest{SessionID: "keep", Tools: []string{"t"}}); err != nil {
		t.Fatalf("in-place update on a full database: %v", err)
	}
	if err := st.HealthCheck(ctx); err != nil {
		t.Fatalf("health check on a full database: %v", err)
	}
	// Free space by deleting data: the same limit now fits a new session.
	for _, id := range created[:len(created)/2+1] {
		if _, err := gov.Close(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gov.Cleanup(ctx); err != nil {
		t.Fatalf("cleanup on a full database: %v", err)
	}
	req := longSession("after-delete", 10)
	req.DeclaredIntent = intent
	if _, err := gov.Create(ctx, req); err != nil {
		t.Fatalf("create after freeing pages: %v", err)
	}
	// Raise the limit (more disk): writes of any size work again.
	if err := st.WriterExec(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		req := longSession(fmt.Sprintf("after-grow-%02d", i), 10)
		req.DeclaredIntent = intent
		if _, err := gov.Create(ctx, req); err != nil {
			t.Fatalf("create after raising the limit: %v", err)
		}
	}
	if got, err := gov.Get(ctx, "keep"); err != nil || got.CallsMade != 4 {
		t.Fatalf("keep at the end: %+v, %v", got, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	integrityCheck(t, path)
}

// A real full disk: a 1 MiB tmpfs in a private mount namespace (unshare),
// where the helper process runs the whole scenario and reports.
var _ = registerRelRole("diskfull-tmpfs", diskFullRole)

type diskFullReport struct {
	Created   int    `json:"created"`
	FullErr   string `json:"full_err"`
	IsFull    bool   `json:"is_full"`
	Missing   string `json:"missing"`    // an acknowledged session not found
	KeepCalls int64  `json:"keep_calls"` // calls on "keep" after the failure
	AfterFree string `json:"after_free"` // error of the first write after freeing space
	Integrity string `json:"integrity"`
}

func diskFullRole(ctx context.Context, args []string, out *lineWriter) error {
	dir := args[0]
	var rep diskFullReport
	// A ballast file stands for other data on the disk; deleting it frees
	// space.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 256<<10), 0o600); err != nil {
		return err
	}
	path := filepath.Join(dir, "s.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("open on tmpfs: %w", err)
	}
	defer st.Close()
	gov := st.Governance()
	if _, err := gov.Create(ctx, longSession("keep", 1000)); err != nil {
		return err
	}
	if _, err := gov.Use(ctx, store.UseRequest{SessionID: "keep", Tools: []string{"t"}}); err != nil {
		return err
	}
	intent := strings.Repeat("y", 4000)
	var created []string
	for i := range 10000 {
		req := longSession(fmt.Sprintf("fill-%05d", i), 10)
		req.DeclaredIntent = intent
		if _, err := gov.Create(ctx, req); err != nil {
			rep.FullErr = err.Error()
			rep.IsFull = errors.Is(err, store.ErrStorageFull)
			break
		}
		created = append(created, req.ID)
	}
	rep.Created = len(created)
	for _, id := range created {
		if _, err := gov.Get(ctx, id); err != nil {
			rep.Missing = id + ": " + err.Error()
			break
		}
	}
	if s, err := gov.Get(ctx, "keep"); err == nil {
		rep.KeepCalls = s.CallsMade
	}
	if err := os.Remove(ballast); err != nil {
		return err
	}
	req := longSession("after-free", 10)
	req.DeclaredIntent = intent
	if _, err := gov.Create(ctx, req); err != nil {
		rep.AfterFree = err.Error()
	} else if _, err := gov.Use(ctx, store.UseRequest{SessionID: "keep", Tools: []string{"t"}}); err != nil {
		rep.AfterFree = err.Error()
	}
	if err := st.Close(); err != nil {
		rep.AfterFree += "; close: " + err.Error()
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&rep.Integrity); err != nil {
		rep.Integrity = err.Error()
	}
	return out.JSON(rep)
}

func TestDiskFullTmpfs(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not available; TestDiskFullMaxPageCount covers SQLITE_FULL")
	}
	probe := exec.Command("unshare", "-rm", "sh", "-c", `d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"`)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); TestDiskFullMaxPageCount covers SQLITE_FULL", err, out)
	}
	dir := t.TempDir()
	// 3 MiB: the migrated schema and its WAL need about 1.1 MiB beside the
	// ballast, more since migration 25 rebuilds the upload tables (with
	// 2 MiB the creation itself no longer fits: TestCreateOnFullDisk).
	mount := `mount -t tmpfs -o size=3m tmpfs "$1" && shift && exec "$@"`
	h := startHelperCmd(t, []string{"unshare", "-rm", "sh", "-c", mount, "sh", dir}, "diskfull-tmpfs", dir)
	lines, err := h.wait()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if len(lines) != 1 {
		t.Fatalf("helper output: %q", lines)
	}
	var rep diskFullReport
	if err := jsonUnmarshal(lines[0], &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("tmpfs full after %d sessions: %s", rep.Created, rep.FullErr)
	switch {
	case rep.FullErr == "":
		t.Fatal("the tmpfs never filled up")
	case !rep.IsFull:
		t.Fatalf("full disk: got %q, want ErrStorageFull", rep.FullErr)
	case rep.Created == 0:
		t.Fatal("nothing fitted before the disk was full")
	case rep.Missing != "":
		t.Fatalf("acknowledged session lost after the disk filled: %s", rep.Missing)
	case rep.KeepCalls != 1:
		t.Fatalf("keep has %d calls, want 1", rep.KeepCalls)
	case rep.AfterFree != "":
		t.Fatalf("write after freeing space: %s", rep.AfterFree)
	case rep.Integrity != "ok":
		t.Fatalf("integrity_check: %s", rep.Integrity)
	}
}

// Read-only files and directories. Permissions do not bind root, so when
// the tests run as root the helper runs without the capabilities that
// override them (setpriv).
var _ = registerRelRole("readonly-open", readOnlyRole)

type readOnlyReport struct {
	OpenErr   string `json:"open_err"`
	OpenRO    bool   `json:"open_ro"`
	HealthErr string `json:"health_err"`
	HealthRO  bool   `json:"health_ro"`
	GetErr    string `json:"get_err"`
	WriteErr  string `json:"write_err"`
	WriteRO   bool   `json:"write_ro"`
	Wrote     bool   `json:"wrote"`
}

func readOnlyRole(ctx context.Context, args []string, out *lineWriter) error {
	var rep readOnlyReport
	st, err := sqlstore.Open(ctx, args[0])
	if err != nil {
		rep.OpenErr, rep.OpenRO = err.Error(), errors.Is(err, store.ErrReadOnly)
		return out.JSON(rep)
	}
	defer st.Close()
	if err := st.HealthCheck(ctx); err != nil {
		rep.HealthErr, rep.HealthRO = err.Error(), errors.Is(err, store.ErrReadOnly)
	}
	if args[1] == "existing" {
		if _, err := st.Governance().Get(ctx, "keep"); err != nil {
			rep.GetErr = err.Error()
		}
	}
	_, err = st.Governance().Create(ctx, longSession("new", 1))
	if err != nil {
		rep.WriteErr, rep.WriteRO = err.Error(), errors.Is(err, store.ErrReadOnly)
	} else {
		rep.Wrote = true
	}
	return out.JSON(rep)
}

func TestReadOnly(t *testing.T) {
	var prefix []string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("running as root without setpriv: file permissions cannot be enforced")
		}
		prefix = []string{"setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"}
	}
	cases := []struct {
		name     string
		existing bool
		fileMode os.FileMode // of an existing database file
		dirMode  os.FileMode
	}{
		{"file", true, 0o444, 0o755},
		{"dir", true, 0o644, 0o555},
		{"file-and-dir", true, 0o444, 0o555},
		{"new-in-dir", false, 0, 0o555},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ro")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "s.db")
			if c.existing {
				st, err := sqlstore.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Governance().Create(context.Background(), longSession("keep", 1)); err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				os.Remove(path + "-writer.lock")
				if err := os.Chmod(path, c.fileMode); err != nil {
					t.Fatal(err)
				}
			}
			before := dirFiles(t, dir)
			if err := os.Chmod(dir, c.dirMode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			h := startHelperCmd(t, prefix, "readonly-open", path, map[bool]string{true: "existing", false: "new"}[c.existing])
			lines, err := h.wait()
			if err != nil || len(lines) != 1 {
				t.Fatalf("helper: %v, %q", err, lines)
			}
			var rep readOnlyReport
			if err := jsonUnmarshal(lines[0], &rep); err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", rep)
			switch {
			case rep.OpenErr != "" && !rep.OpenRO:
				t.Fatalf("open failed with %q, want ErrReadOnly", rep.OpenErr)
			case rep.OpenErr != "":
				// Refused at open: clear.
			case !rep.HealthRO:
				t.Fatalf("HealthCheck of a store that cannot write: %q, want ErrReadOnly", rep.HealthErr)
			case rep.Wrote:
				t.Fatal("a write succeeded on a read-only database")
			case !rep.WriteRO:
				t.Fatalf("first write failed with %q, want ErrReadOnly", rep.WriteErr)
			case rep.GetErr != "":
				t.Fatalf("reads fail on a read-only database: %s", rep.GetErr)
			}
			after := dirFiles(t, dir)
			for name, b := range before {
				if after[name] != b {
					t.Errorf("%s changed", name)
				}
			}
			if c.dirMode&0o200 == 0 && len(after) != len(before) {
				t.Errorf("files appeared in a read-only directory: %v", keys(after))
			}
		})
	}
}

func keys[M ~map[string]V, V any](m M) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
