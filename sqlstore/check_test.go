package sqlstore_test

// Check (sessionctl doctor's checks as library code) and CheckIntact: a
// sound store passes every check; a damaged file, a foreign file and a
// damaged document fail the right check, and the store is then not
// opened; an immutable file is checked without anything changing or
// appearing beside it.

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// checkResults runs Check and returns its results by name, with the
// names in order.
func checkResults(t *testing.T, path string, opts check.Options) (check.Report, map[string]check.Result, []string) {
	t.Helper()
	rep, err := sqlstore.Check(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	byName := map[string]check.Result{}
	var names []string
	for _, r := range rep.Results {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	return rep, byName, names
}

// writeStore writes a session store with a few governed sessions to a new
// directory and returns its path.
func writeStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, realStoreBytes(t, 20), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckSoundStore(t *testing.T) {
	path := writeStore(t)
	rep, byName, names := checkResults(t, path, check.Options{})
	want := []string{"file", "sqlite", "integrity", "foreign_keys", "schema", "tables", "documents", "journal", "wal", "write", "modes", "lock", "store", "audit", "search_index"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks %v, want %v", names, want)
	}
	if rep.Failed() {
		t.Fatalf("a sound store failed: %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Status != check.OK {
			t.Errorf("%s: %s %s", r.Name, r.Status, r.Detail)
		}
	}
	if d := byName["integrity"].Detail; d != "integrity_check ok" {
		t.Errorf("integrity: %q", d)
	}
	_, byName, _ = checkResults(t, path, check.Options{Quick: true})
	if d := byName["integrity"].Detail; d != "quick_check ok" {
		t.Errorf("quick integrity: %q", d)
	}
	if err := sqlstore.CheckIntact(context.Background(), path); err != nil {
		t.Errorf("CheckIntact on a sound store: %v", err)
	}
}

func TestCheckMissingFile(t *testing.T) {
	_, err := sqlstore.Check(context.Background(), filepath.Join(t.TempDir(), "none.db"), check.Options{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check of a missing file: %v", err)
	}
	if _, err := sqlstore.Check(context.Background(), t.TempDir(), check.Options{}); err == nil {
		t.Fatal("Check of a directory: no error")
	}
}

// TestCheckDamagedFile: pages overwritten with garbage fail the integrity
// check, and the store is not opened.
func TestCheckDamagedFile(t *testing.T) {
	path := writeStore(t)
	var root int
	if err := openSQL(t, path, true).QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'governed_sessions'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	copy(b[(root-1)*page:root*page], randomBytes(7, page))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, filepath.Dir(path))
	rep, byName, _ := checkResults(t, path, check.Options{})
	if !rep.Failed() || byName["integrity"].Status != check.Fail {
		t.Fatalf("a damaged file: %+v", rep.Results)
	}
	if _, ok := byName["store"]; ok {
		t.Errorf("the store was opened on a damaged file: %+v", byName["store"])
	}
	err = sqlstore.CheckIntact(context.Background(), path)
	var dmg *check.DamagedError
	if !errors.As(err, &dmg) || !errors.Is(err, store.ErrCorrupt) || !strings.HasPrefix(dmg.Why, "quick_check: ") {
		t.Errorf("CheckIntact on a damaged file: %v", err)
	}
	sameDir(t, filepath.Dir(path), before)
}

// TestCheckForeignFiles: a file that is not SQLite fails "sqlite"; a
// SQLite database of another application fails "schema"; neither is
// changed.
func TestCheckForeignFiles(t *testing.T) {
	for _, c := range []struct {
		name    string
		content []byte
		check   string
		detail  string
	}{
		{"text", []byte(strings.Repeat("not a database ", 500)), "sqlite", "not a readable SQLite database: database file is damaged"},
		{"other-app", foreignDB(t, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)"), "schema", "not a session store: no goose_db_version table"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			if err := os.WriteFile(path, c.content, 0o600); err != nil {
				t.Fatal(err)
			}
			before := dirFiles(t, filepath.Dir(path))
			rep, byName, _ := checkResults(t, path, check.Options{})
			r := byName[c.check]
			if !rep.Failed() || r.Status != check.Fail || !strings.HasPrefix(r.Detail, c.detail) {
				t.Fatalf("%s: %+v", c.check, rep.Results)
			}
			if _, ok := byName["store"]; ok {
				t.Errorf("the store was opened: %+v", rep.Results)
			}
			sameDir(t, filepath.Dir(path), before)
		})
	}
}

// TestCheckDamagedDocument: a stored document that does not decode fails
// "documents" with its ids, and CheckIntact refuses the rewrite.
func TestCheckDamagedDocument(t *testing.T) {
	path := writeStore(t)
	if _, err := openSQL(t, path, false).Exec(`UPDATE governed_sessions SET authorized_tools = '[' WHERE id = 'session-0003'`); err != nil {
		t.Fatal(err)
	}
	rep, byName, _ := checkResults(t, path, check.Options{})
	d := byName["documents"]
	if !rep.Failed() || d.Status != check.Fail || !strings.Contains(d.Detail, "governed_sessions session-0003 (authorized tools)") {
		t.Fatalf("documents: %+v", d)
	}
	if _, ok := byName["store"]; ok {
		t.Errorf("the store was opened: %+v", rep.Results)
	}
	err := sqlstore.CheckIntact(context.Background(), path)
	var dmg *check.DamagedError
	if !errors.As(err, &dmg) || !strings.Contains(dmg.Why, "the first: governed_sessions session-0003 (authorized tools)") {
		t.Errorf("CheckIntact: %v", err)
	}
}

// TestCheckImmutableChangesNothing: an immutable database is reported as
// one that cannot be written, is read without opening the store, and
// nothing in its directory changes or appears.
func TestCheckImmutableChangesNothing(t *testing.T) {
	path := writeStore(t)
	chattr(t, "+i", path)
	t.Cleanup(func() { chattr(t, "-i", path) })
	before := dirFiles(t, filepath.Dir(path))
	rep, byName, _ := checkResults(t, path, check.Options{})
	if w := byName["write"]; w.Status != check.Fail || !strings.HasPrefix(w.Detail, "the database cannot be written") {
		t.Errorf("write: %+v", w)
	}
	if byName["documents"].Status != check.OK || byName["integrity"].Status != check.OK {
		t.Errorf("an immutable store was not read: %+v", rep.Results)
	}
	if _, ok := byName["store"]; ok {
		t.Errorf("the store was opened: %+v", rep.Results)
	}
	sameDir(t, filepath.Dir(path), before)
}

// sameDir fails unless dir holds exactly the files of before, unchanged.
func sameDir(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := dirFiles(t, dir)
	for name, b := range before {
		if a, ok := after[name]; !ok || a != b {
			t.Errorf("%s was changed or removed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

// TestCheckModes: the permissions of the database's files are reported;
// a file every user may write is a warning, not a failure.
func TestCheckModes(t *testing.T) {
	path := writeStore(t)
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	_, byName, _ := checkResults(t, path, check.Options{})
	if m := byName["modes"]; m.Status != check.OK || !strings.HasPrefix(m.Detail, "sessions.db 0640") {
		t.Errorf("modes: %+v", m)
	}
	if l := byName["lock"]; l != (check.Result{Name: "lock", Status: check.OK, Detail: "no other process holds it"}) {
		t.Errorf("lock: %+v", l)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	rep, byName, _ := checkResults(t, path, check.Options{})
	if m := byName["modes"]; m.Status != check.Warn || !strings.HasPrefix(m.Detail, "every user may write sessions.db") || rep.Failed() {
		t.Errorf("a world-writable file: %+v", m)
	}
}

// TestCheckTenantAudit: doctor verifies every tenant's audit chains too
// (tenant_audit), which the store's own facet does not see, and fails on
// a changed event of a tenant's chain.
func TestCheckTenantAudit(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "sessions.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := st.Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ts.Governance().Create(ctx, store.CreateRequest{AgentID: "bot", AuthorizedTools: []string{"t"}, CallBudget: 5, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Governance().Use(ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rep, byName, _ := checkResults(t, path, check.Options{})
	if r := byName["tenant_audit"]; rep.Failed() || r.Status != check.OK || !strings.Contains(r.Detail, "1 tenant: 2 chains with 2 events") {
		t.Fatalf("tenant_audit of a sound store: %+v (%+v)", r, rep.Results)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_events SET detail = '{"changed":true}' WHERE tenant = 'acme' AND kind = 'create'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, byName, _ = checkResults(t, path, check.Options{})
	if r := byName["tenant_audit"]; r.Status != check.Fail || !strings.Contains(r.Detail, "acme") {
		t.Fatalf("tenant_audit after a tenant's event changed: %+v", r)
	}
	if r := byName["audit"]; r.Status != check.OK {
		t.Errorf("the default tenant's audit after a tenant's event changed: %+v", r)
	}
}
