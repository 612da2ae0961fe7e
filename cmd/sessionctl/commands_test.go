package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func TestEveryCommandHasHelpWithExample(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			r := e.run(args...).want(t, 0)
			if !strings.HasPrefix(r.stdout, "Usage: sessionctl [--db PATH] "+c.name) {
				t.Errorf("%v: help does not start with the synopsis:\n%s", args, r.stdout)
			}
			if _, ex, ok := strings.Cut(r.stdout, "\nExample:\n  "); !ok || !strings.Contains(strings.SplitN(ex, "\n", 2)[0], "sessionctl ") {
				t.Errorf("%v: help has no example:\n%s", args, r.stdout)
			}
			if r.stderr != "" {
				t.Errorf("%v: help wrote to stderr: %q", args, r.stderr)
			}
		}
	}
	if _, err := os.Stat(e.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("help created the database file (%v)", err)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--tool", "t", "--budget", "2").want(t, 0)
	before := fileState(t, e.db)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{}, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--bogus", "list"}, "unknown flag --bogus"},
		{[]string{"list", "--bogus"}, "unknown flag --bogus"},
		{[]string{"list", "extra"}, `unexpected argument "extra"`},
		{[]string{"list", "--status", "paused"}, "--status must be active, closed or expired"},
		{[]string{"list", "--limit", "0"}, "--limit must be between 1 and 1000"},
		{[]string{"list", "--limit", "x"}, `invalid value "x" for flag --limit`},
		{[]string{"show"}, "missing ID"},
		{[]string{"show", "a", "b"}, `unexpected argument "b"`},
		{[]string{"show", ""}, "id: must not be empty"},
		{[]string{"use"}, "missing ID"},
		{[]string{"use", "s", "--tool", "bad tool"}, "tools: tool name has a character"},
		{[]string{"use", "s", "--tool", ""}, "empty name"},
		{[]string{"use", "s", "--agent"}, "flag --agent needs a value"},
		{[]string{"close"}, "missing ID"},
		{[]string{"close-agent"}, "missing AGENT"},
		{[]string{"backup"}, "missing FILE"},
		{[]string{"import"}, "missing FILE"},
		{[]string{"migrate", "sideways"}, `unknown action "sideways"`},
		{[]string{"create", "--tool", "t", "--budget", "1"}, "--agent is required"},
		{[]string{"create", "--agent", "a"}, "--budget is required"},
		{[]string{"create", "--agent", "a", "--budget", "-5"}, "--budget is required and must not be negative"},
		{[]string{"create", "--agent", "a", "--budget", "1", "--rate-limit", "-1"}, "rate_limit: must not be negative"},
		{[]string{"create", "--agent", "a", "--budget", "1", "--time-limit", "-1s"}, `invalid value "-1s" for flag --time-limit: a negative duration is refused`},
		{[]string{"create", "--agent", "a", "--budget", "1", "--time-limit", "soon"}, "invalid value"},
		{[]string{"create", "--agent", "a", "--budget", "1", "--sensitivity", "secret"}, "sensitivity: unknown level"},
		{[]string{"create", "--agent", "a", "--budget", "1", "--tool", "a;b"}, "authorized_tools"},
		{[]string{"create", "--agent", strings.Repeat("x", 300), "--budget", "1"}, "agent_id: too long"},
		{[]string{"help", "nothing"}, `unknown command "nothing"`},
	} {
		r := e.run(c.args...)
		r.want(t, exitUsage)
		if c.msg == "" {
			continue
		}
		r.oneLineErr(t, c.msg)
	}
	sameFiles(t, before, fileState(t, e.db))
	// A usage error of a command that would create the file creates nothing.
	e2 := newTestEnv(t)
	e2.run("create", "--agent", "a", "--budget", "1", "--sensitivity", "secret").want(t, exitUsage)
	if _, err := os.Stat(e2.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused create created the database (%v)", err)
	}
}

// TestMissingDatabase: read, drive and maintenance commands on a missing
// file say so and do not create it.
func TestMissingDatabase(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, args := range [][]string{
		{"list"}, {"show", "x"}, {"stats"}, {"use", "x", "--tool", "t"}, {"close", "x"},
		{"close-agent", "a"}, {"cleanup"}, {"migrate"}, {"migrate", "status"}, {"doctor"},
		{"backup", filepath.Join(e.dir, "b.db")}, {"export"},
	} {
		e.run(args...).want(t, exitError).oneLineErr(t, "database file "+e.db+" does not exist")
	}
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("commands on a missing database created %d files (%s, ...)", len(entries), entries[0].Name())
	}
}

func TestDamagedDatabase(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	if err := os.WriteFile(e.db, []byte(strings.Repeat("not a database ", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fileState(t, e.db)
	for _, args := range [][]string{
		{"list"}, {"show", "x"}, {"stats"}, {"use", "x", "--tool", "t"}, {"create", "--agent", "a", "--budget", "1"},
		{"close", "x"}, {"cleanup"}, {"export"}, {"import", "-"},
	} {
		e.run(args...).want(t, exitNotStore).oneLineErr(t, "not a session store")
	}
	for _, args := range [][]string{{"migrate", "status"}, {"migrate", "up"}, {"backup", filepath.Join(e.dir, "b.db")}} {
		e.run(args...).want(t, exitStorage).oneLineErr(t, "damaged")
	}
	r := e.run("doctor").want(t, exitError).oneLineErr(t, "is unhealthy")
	if !strings.Contains(r.stdout, "sqlite  fail    not a readable SQLite database: database file is damaged") {
		t.Errorf("doctor output:\n%s", r.stdout)
	}
	sameFiles(t, before, fileState(t, e.db))
}

// TestDamagedPages: a valid SQLite header with overwritten pages fails
// doctor's integrity check.
func TestDamagedPages(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	st := e.openStore()
	for i := range 200 {
		if _, err := st.Governance().Create(context.Background(), store.CreateRequest{ID: fmt.Sprintf("s%03d", i),
			AgentID: "a", CallBudget: 1, DeclaredIntent: strings.Repeat("padding ", 40)}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	e.run("cleanup").want(t, 0) // checkpoint: every page is in the main file
	// Damage every other leaf page of the governed_sessions table (found
	// with the dbstat table), never the schema.
	raw, err := sql.Open("sqlite", "file:"+e.db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var pages []int64
	rows, err := raw.Query("SELECT pageno FROM dbstat WHERE name = 'governed_sessions' AND pagetype = 'leaf' ORDER BY pageno")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	rows.Close()
	raw.Close()
	f, err := os.OpenFile(e.db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
	damaged := 0
	for i := 0; i < len(pages); i += 2 {
		if _, err := f.WriteAt(garbage, (pages[i]-1)*4096); err != nil {
			t.Fatal(err)
		}
		damaged++
	}
	if damaged < 5 {
		t.Fatalf("only %d data pages to damage", damaged)
	}
	f.Close()
	r := e.run("doctor", "--json").want(t, exitError)
	var doc doctorJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if doc.Healthy {
		t.Fatalf("doctor calls a damaged file healthy: %+v", doc)
	}
	failed := map[string]bool{}
	for _, c := range doc.Checks {
		if c.Status == checkFail {
			failed[c.Name] = true
		}
		if c.Name == "store" {
			t.Errorf("doctor opened the store on a damaged file: %+v", c)
		}
	}
	if !failed["integrity"] {
		t.Errorf("integrity check did not fail: %+v", doc.Checks)
	}
}

// setSchemaVersion records a migration version in the database directly,
// as a newer binary would have.
func setSchemaVersion(t *testing.T, path string, version int64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)", version); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchema(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--tool", "t", "--budget", "2").want(t, 0)
	setSchemaVersion(t, e.db, 9999)
	before := fileState(t, e.db)
	for _, args := range [][]string{
		{"list"}, {"show", "s"}, {"stats"}, {"use", "s", "--tool", "t"}, {"close", "s"}, {"cleanup"},
		{"create", "--agent", "a", "--budget", "1"}, {"export"}, {"migrate", "up"},
	} {
		e.run(args...).want(t, exitSchemaTooNew).oneLineErr(t, "database schema is newer than this binary (database version 9999")
	}
	r := e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "version 9999 is newer than this binary") {
		t.Errorf("doctor output:\n%s", r.stdout)
	}
	r = e.run("migrate", "status").want(t, exitSchemaTooNew).oneLineErr(t, "database schema is newer than this binary (database version 9999")
	e.run("migrate", "status", "--json").want(t, exitSchemaTooNew)
	if !strings.Contains(r.stdout, "the database is newer than this binary") {
		t.Errorf("migrate status output:\n%s", r.stdout)
	}
	sameFiles(t, before, fileState(t, e.db))
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	bothBackends(t, testListPaging)
}

func testListPaging(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	for i := range 5 {
		e.run("create", "--id", fmt.Sprintf("s%d", i), "--agent", "a", "--budget", "1").want(t, 0)
	}
	r := e.run("list", "--limit", "2").want(t, 0)
	if strings.Count(r.stdout, "\n") != 3 || r.stderr != "more sessions follow: add --after s1 for the next page\n" {
		t.Fatalf("first page:\n%s%s", r.stdout, r.stderr)
	}
	var page listJSON
	r = e.run("list", "--limit", "2", "--after", "s1", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].ID != "s2" || page.Next != "s3" {
		t.Fatalf("second page: %+v", page)
	}
	r = e.run("list", "--limit", "2", "--all", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 || page.Next != "" {
		t.Fatalf("--all: %d items, next %q", len(page.Items), page.Next)
	}
	e.run("list", "--agent", "nobody").want(t, 0)
	if r := e.run("list", "--agent", "nobody"); r.stdout != "no governed sessions\n" {
		t.Fatalf("empty list: %q", r.stdout)
	}
}

func TestShowNotFound(t *testing.T) {
	t.Parallel()
	bothBackends(t, testShowNotFound)
}

func testShowNotFound(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	e.run("show", "nope").want(t, exitNotFound).oneLineErr(t, "session nope: session not found")
	e.run("close", "nope").want(t, exitNotFound).oneLineErr(t, "nope: session not found")
	e.run("close", "s").want(t, 0)
	e.run("close", "s").want(t, exitClosed).oneLineErr(t, "s: session already closed")
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, exitConflict).oneLineErr(t, "session s already exists")
}

func TestCreateMaxActive(t *testing.T) {
	t.Parallel()
	bothBackends(t, testCreateMaxActive)
}

func testCreateMaxActive(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--agent", "a", "--budget", "1", "--max-active", "2").want(t, 0)
	e.run("create", "--agent", "a", "--budget", "1", "--max-active", "2").want(t, 0)
	e.run("create", "--agent", "a", "--budget", "1", "--max-active", "2").want(t, exitTooMany).
		oneLineErr(t, "too many concurrent sessions: agent a has 2 active sessions, --max-active is 2")
	r := e.run("close-agent", "a", "--json").want(t, 0)
	if strings.TrimSpace(r.stdout) != "{\n  \"agent_id\": \"a\",\n  \"closed\": 2\n}" {
		t.Fatalf("close-agent --json: %s", r.stdout)
	}
	e.run("create", "--agent", "a", "--budget", "1", "--max-active", "2").want(t, 0)
}

func TestCleanupCheckpoints(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture() // t-closed and t-expired are removable
	st, err := sqlstore.Open(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() // another process keeps the database open: the WAL stays
	if _, err := st.Governance().Create(context.Background(), store.CreateRequest{ID: "other", AgentID: "x", CallBudget: 1}); err != nil {
		t.Fatal(err)
	}
	if fileSize(e.db+"-wal") == 0 {
		t.Fatal("expected a WAL while another store is open")
	}
	var doc cleanupJSON
	r := e.run("cleanup", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Removed != 2 || doc.WALBytesBefore == 0 || doc.WALBytesAfter != 0 || !doc.Complete {
		t.Fatalf("cleanup: %+v", doc)
	}
	r = e.run("list", "--json").want(t, 0)
	for _, gone := range []string{`"t-closed"`, `"t-expired"`} {
		if strings.Contains(r.stdout, gone) {
			t.Errorf("cleanup left %s", gone)
		}
	}
	if !strings.Contains(r.stdout, `"other"`) || !strings.Contains(r.stdout, `"t-active"`) {
		t.Errorf("cleanup removed live sessions:\n%s", r.stdout)
	}
	r = e.run("cleanup", "--vacuum").want(t, 0)
	if !strings.Contains(r.stdout, "removed 0 closed or expired governed sessions\nwal: ") || !strings.Contains(r.stdout, "vacuum: database file ") {
		t.Errorf("cleanup --vacuum output:\n%s", r.stdout)
	}
}

func TestStatsAndDoctor(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	var doc statsJSON
	r := e.run("stats", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := statusCounts{Total: 4, Active: 2, Closed: 1, Expired: 1}
	if doc.Governed != want || doc.SchemaVersion != doc.BinarySchemaVersion || doc.SchemaVersion < 1 ||
		doc.PageSize == nil || *doc.PageSize == 0 || *doc.Pages == 0 || doc.DatabaseBytes == nil || *doc.DatabaseBytes == 0 || doc.StoreBytes != nil || doc.Backend != "sqlite" {
		t.Fatalf("stats: %+v", doc)
	}
	r = e.run("stats").want(t, 0)
	if !strings.Contains(r.stdout, "governed sessions  4: 2 active, 1 closed, 1 expired\n") {
		t.Errorf("stats:\n%s", r.stdout)
	}
	r = e.run("doctor").want(t, 0)
	for _, line := range []string{"integrity     ok", "foreign_keys  ok", "schema        ok", "store         ok", "is healthy"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("doctor output lacks %q:\n%s", line, r.stdout)
		}
	}
}

func TestDoctorForeignKeys(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	db, err := sql.Open("sqlite", "file:"+e.db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO governed_use_requests (session_id, request_id, tools, outcome, created_at_ms)
		VALUES ('ghost', 'r', '[]', 'ok', 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "foreign_keys  fail    1 row violate") && !strings.Contains(r.stdout, "foreign_keys  fail    1 row") {
		t.Errorf("doctor output:\n%s", r.stdout)
	}
}

func TestMigrateCommands(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	r := e.run("migrate", "up").want(t, 0)
	if !strings.HasPrefix(r.stdout, "created "+e.db+" at schema version ") {
		t.Errorf("migrate up on a new file: %q", r.stdout)
	}
	r = e.run("migrate", "up", "--json").want(t, 0)
	var up migrateUpJSON
	if err := json.Unmarshal([]byte(r.stdout), &up); err != nil || up.Created || up.FromVersion != up.ToVersion || up.ToVersion < 1 {
		t.Errorf("migrate up again: %s (%v)", r.stdout, err)
	}
	var status migrateStatusJSON
	r = e.run("migrate", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil {
		t.Fatal(err)
	}
	// Versions may have gaps: the last one is the binary's.
	if status.DatabaseVersion != status.BinaryVersion || len(status.Migrations) == 0 ||
		int64(status.Migrations[len(status.Migrations)-1].Version) != int64(status.BinaryVersion) {
		t.Fatalf("migrate status: %+v", status)
	}
	for _, m := range status.Migrations {
		if m.State != "applied" || m.AppliedAt == "" || !strings.HasSuffix(m.File, ".sql") {
			t.Errorf("migration %+v", m)
		}
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	bothBackends(t, testExportImportRoundTrip)
}

func testExportImportRoundTrip(t *testing.T, newTestEnv envMaker) {
	src := newTestEnv(t)
	src.fixture()
	exported := filepath.Join(src.dir, "export.json")
	src.run("export", "--output", exported).want(t, 0)
	src.run("export", "--output", exported).want(t, exitError).oneLineErr(t, "exists: remove it or choose another name")

	dst := newTestEnv(t)
	dst.clock = src.clock
	r := dst.run("import", exported).want(t, 0)
	// Two agents' chains, and the chains of the three sessions with
	// decisions.
	if r.stdout != "imported 4 governed sessions and 5 audit chains from 1 file\n" {
		t.Errorf("import: %q", r.stdout)
	}
	want := src.run("list", "--json").want(t, 0).stdout
	if got := dst.run("list", "--json").want(t, 0).stdout; got != want {
		t.Fatalf("imported sessions differ:\n%s\nwant:\n%s", got, want)
	}
	// Budgets carry on where they were: t-spent stays spent.
	dst.run("use", "t-spent", "--tool", "x").want(t, exitBudget)

	before := fileState(t, dst.db)
	// Sections are imported in registry order, in one transaction: the
	// governed session is the first conflict, and nothing is written.
	dst.run("import", exported).want(t, exitConflict).oneLineErr(t, "governed session t-active exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	// An existing audit chain is a conflict like an existing id.
	dst.runStdin(onlyAudit(t, readFile(t, exported)), "import", "-").want(t, exitConflict).oneLineErr(t, "the audit chain of agent a1 exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	dst.runStdin(withoutAudit(t, readFile(t, exported)), "import", "-").want(t, exitConflict).oneLineErr(t, "governed session t-active exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	r = dst.run("import", "--skip-existing", exported).want(t, 0)
	if r.stdout != "imported nothing from 1 file, 9 existing skipped\n" {
		t.Errorf("import --skip-existing: %q", r.stdout)
	}
	// stdin
	one := src.run("export", "t-active").want(t, 0).stdout
	third := newTestEnv(t)
	third.runStdin(one, "import", "-").want(t, 0)
	third.run("show", "t-active").want(t, 0)
}

func TestImportBadInput(t *testing.T) {
	t.Parallel()
	bothBackends(t, testImportBadInput)
}

func testImportBadInput(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "keep", "--agent", "a", "--budget", "1").want(t, 0)
	good := withoutAudit(t, e.run("export").want(t, 0).stdout)
	write := func(name, content string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	renamed := strings.Replace(good, `"id": "keep"`, `"id": "fresh"`, 1)
	cases := []struct {
		content string
		msg     string
	}{
		{`{"format": "sessionctl-export", "version": 1, "governed_sessions": [`, "malformed JSON"},
		{`[1, 2]`, "not a JSON object"},
		{`{"hello": "world"}`, "neither a sessionctl-export file nor an a3s session file: invalid input: a3s.id: missing"},
		{`{"format": "other-tool", "version": 1}`, `unknown format "other-tool"`},
		{fmt.Sprintf(`{"format": "sessionctl-export", "version": %d, "governed_sessions": []}`, archive.Version+1),
			fmt.Sprintf("export version %d is not supported", archive.Version+1)},
		{strings.Replace(renamed, `"calls_made": 0`, `"calls_made": 5`, 1), "calls_made: must be between 0 and call_budget"},
		{strings.Replace(renamed, `"status": "active"`, `"status": "paused"`, 1), "status: unknown status"},
		{strings.Replace(renamed, `"agent_id": "a"`, `"agent_id": ""`, 1), "agent_id: must not be empty"},
		{strings.Replace(renamed, `"created_at": "`, `"created_at": "yesterday`, 1), "created_at: not an RFC 3339 time"},
		{strings.Replace(renamed, `"format"`, `"surprise": 1, "format"`, 1), "unknown field"},
	}
	before := fileState(t, e.db)
	for i, c := range cases {
		p := write(fmt.Sprintf("bad%d.json", i), c.content)
		e.run("import", p).want(t, exitUsage).oneLineErr(t, c.msg)
	}
	e.run("import", filepath.Join(e.dir, "missing.json")).want(t, exitError).oneLineErr(t, "no such file")
	sameFiles(t, before, fileState(t, e.db))

	// The first bad file stops the import; the files before it stay.
	ok := write("ok.json", renamed)
	bad := write("bad.json", "{")
	e.run("import", ok, bad).want(t, exitUsage).oneLineErr(t, "bad.json: invalid input: file: not a JSON object: malformed JSON at byte 1: unexpected end of JSON input (the 1 file before it was imported)")
	e.run("show", "fresh").want(t, 0)

	// --dry-run writes nothing, not even a new database file.
	dry := newTestEnv(t)
	r := dry.run("import", "--dry-run", ok).want(t, 0)
	if r.stdout != "checked (dry run, nothing written) 1 governed session from 1 file\n" {
		t.Errorf("dry run: %q", r.stdout)
	}
	if dry.storeExists() {
		t.Error("dry run created the database")
	}
}

// TestBackupWhileWriting copies the database while another store keeps
// writing to it; the copy is a consistent, complete session store.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "base", "--agent", "a", "--tool", "t", "--budget", "1000000").want(t, 0)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, e.db, sqlstore.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			if i == 3 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: "base", Tools: []string{"t"}}); err != nil {
				writeErr = err
				return
			}
			if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: fmt.Sprintf("w%05d", i), AgentID: "w", CallBudget: 1}); err != nil {
				writeErr = err
				return
			}
		}
	}()
	<-started
	var copies []string
	for i := range 3 {
		dest := filepath.Join(e.dir, fmt.Sprintf("backup%d.db", i))
		r := e.run("backup", dest, "--json").want(t, 0)
		var doc backupJSON
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.IntegrityCheck != "ok" || doc.Bytes != fileSize(dest) {
			t.Fatalf("backup: %s (%v)", r.stdout, err)
		}
		copies = append(copies, dest)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer during backups: %v", writeErr)
	}
	for _, c := range copies {
		b, err := sqlstore.Open(ctx, c)
		if err != nil {
			t.Fatalf("open backup %s: %v", c, err)
		}
		base, err := b.Governance().Get(ctx, "base")
		if err != nil {
			t.Fatal(err)
		}
		// Consistency: each Use is followed by one Create, so a snapshot
		// holds calls_made created sessions, or one fewer.
		page, err := b.Governance().List(ctx, store.ListFilter{AgentID: "w", Limit: store.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(page.Items))
		if page.Next != "" || (n != base.CallsMade && n != base.CallsMade-1) {
			t.Errorf("backup %s: %d calls made but %d sessions created (next %q)", c, base.CallsMade, n, page.Next)
		}
		b.Close()
	}
	e.run("backup", copies[0]).want(t, exitError).oneLineErr(t, "exists: remove it, choose another name, or give --force")
	e.run("backup", filepath.Join(e.dir, "no", "such", "dir.db")).want(t, exitError).oneLineErr(t, "does not exist")
}

func TestDemo(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	r := e.run("demo").want(t, 0)
	golden(t, "demo", e.normalize(r.stdout))
	r = e.run("demo").want(t, 0)
	if !strings.Contains(r.stdout, "(existing; the demo adds its sessions, --fresh starts over)") {
		t.Errorf("second demo:\n%s", r.stdout)
	}
	var page listJSON
	if err := json.Unmarshal([]byte(e.run("list", "--json").want(t, 0).stdout), &page); err != nil || len(page.Items) != 4 {
		t.Fatalf("two demos keep four governed sessions: %d (%v)", len(page.Items), err)
	}
	r = e.run("demo", "--fresh").want(t, 0)
	if !strings.Contains(r.stdout, "(new)") {
		t.Errorf("demo --fresh:\n%s", r.stdout)
	}
	if err := json.Unmarshal([]byte(e.run("list", "--json").want(t, 0).stdout), &page); err != nil || len(page.Items) != 2 {
		t.Fatalf("demo --fresh keeps two governed sessions: %d (%v)", len(page.Items), err)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	r := e.run("version").want(t, 0)
	if !strings.HasPrefix(r.stdout, "sessionctl ") || !strings.Contains(r.stdout, "schema version ") || !strings.Contains(r.stdout, "SQLite 3.") {
		t.Errorf("version:\n%s", r.stdout)
	}
	var doc versionJSON
	if err := json.Unmarshal([]byte(e.run("version", "--json").want(t, 0).stdout), &doc); err != nil || doc.SchemaVersion < 1 || doc.GoVersion == "" {
		t.Errorf("version --json: %+v (%v)", doc, err)
	}
	if _, err := os.Stat(e.db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("version created the database (%v)", err)
	}
}

func TestDatabaseFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "from-env.db")
	t.Setenv("SESSIONCTL_DB", path)
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"create", "--agent", "a", "--budget", "1"}, &out, &errb); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("$SESSIONCTL_DB not used: %v", err)
	}
}

// doctor changes nothing: on a schema older than the binary it reports the
// pending migration and does not open the store (which would migrate it).
func TestDoctorDoesNotMigrateOlderSchema(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	p, db, err := sqlstore.NewMigrationProvider(e.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := e.run("doctor")
	if !strings.Contains(r.stdout, "run sessionctl migrate up") {
		t.Errorf("doctor output lacks the pending migration:\n%s", r.stdout)
	}
	p, db, err = sqlstore.NewMigrationProvider(e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := p.GetDBVersion(context.Background()); err != nil || v != 1 {
		t.Fatalf("schema version after doctor = %d, %v; want 1 (doctor migrated the file)", v, err)
	}
}

// withoutAudit removes the audit section of an export document, for tests
// that import a file into the database it came from (whose chains exist).
func withoutAudit(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "audit")
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// onlyAudit keeps the head and the audit section of an export document.
func onlyAudit(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		switch k {
		case "format", "version", "exported_at", "audit":
		default:
			delete(m, k)
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
