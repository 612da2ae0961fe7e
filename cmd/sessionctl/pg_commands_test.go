package main

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestPGMissingStore: on a schema without a store, read, drive and
// maintenance commands say so and create nothing; a password in the URL is
// never printed.
func TestPGMissingStore(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t)
	u, err := url.Parse(e.db)
	if err != nil {
		t.Fatal(err)
	}
	user := "postgres"
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, "s3cret-pw") // the test server trusts local connections
	e.db = u.String()
	for _, args := range [][]string{
		{"list"}, {"show", "x"}, {"stats"}, {"use", "x", "--tool", "t"}, {"close", "x"},
		{"close-agent", "a"}, {"cleanup"}, {"migrate"}, {"migrate", "status"}, {"export"},
		{"messages", "x"}, {"uploads", "x"}, {"gc", "--keep-last", "1"},
	} {
		r := e.run(args...).want(t, exitError).oneLineErr(t, "has no session store in schema sessionctl (")
		if strings.Contains(r.stderr, "s3cret-pw") || !strings.Contains(r.stderr, "xxxxx") {
			t.Errorf("%v: the password is not redacted: %q", args, r.stderr)
		}
	}
	r := e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "schema       fail    not a session store: no goose_db_version table in schema sessionctl (") ||
		strings.Contains(r.stdout+r.stderr, "s3cret-pw") {
		t.Errorf("doctor on an empty schema:\n%s%s", r.stdout, r.stderr)
	}
	if e.storeExists() {
		t.Fatalf("commands on an empty schema created tables: %v", pgState(t, e.db))
	}
	// An unreachable server is a clear runtime error, for doctor a failed check.
	bad := "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"
	b := &testEnv{t: t, dir: e.dir, db: bad, clock: e.clock, pg: true}
	b.run("list").want(t, exitError).oneLineErr(t, "connect to postgres://nobody@127.0.0.1:1/none")
	if r := b.run("doctor", "--json").want(t, exitError); !strings.Contains(r.stdout, `"name": "server",`) || !strings.Contains(r.stdout, `"status": "fail"`) {
		t.Errorf("doctor on an unreachable server:\n%s", r.stdout)
	}
}

// TestPGMaintenance: stats, doctor, migrate, cleanup on PostgreSQL, and
// the SQLite-only operations refused with exit status 1.
func TestPGMaintenance(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t)
	r := e.run("migrate", "up").want(t, 0)
	if !strings.HasPrefix(r.stdout, "created postgres") || !strings.Contains(r.stdout, " at schema version ") {
		t.Errorf("migrate up on an empty schema: %q", r.stdout)
	}
	var status migrateStatusJSON
	if err := json.Unmarshal([]byte(e.run("migrate", "status", "--json").want(t, 0).stdout), &status); err != nil {
		t.Fatal(err)
	}
	if status.DatabaseVersion != status.BinaryVersion || status.DatabaseVersion < 1 || len(status.Migrations) != int(status.BinaryVersion) {
		t.Fatalf("migrate status: %+v", status)
	}
	for _, m := range status.Migrations {
		if m.State != "applied" || m.AppliedAt == "" || !strings.HasSuffix(m.File, ".sql") {
			t.Errorf("migration %+v", m)
		}
	}
	var up migrateUpJSON
	if err := json.Unmarshal([]byte(e.run("migrate", "up", "--json").want(t, 0).stdout), &up); err != nil ||
		up.Created || up.FromVersion != up.ToVersion || up.ToVersion != status.BinaryVersion {
		t.Errorf("migrate up again: %+v (%v)", up, err)
	}

	e.fixture()
	e.rtFixture()
	var doc statsJSON
	r = e.run("stats", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := statusCounts{Total: 4, Active: 2, Closed: 1, Expired: 1}
	if doc.Governed != want || doc.Backend != "postgres" || doc.SchemaVersion != doc.BinarySchemaVersion ||
		doc.DatabaseBytes == nil || *doc.DatabaseBytes == 0 || doc.StoreBytes == nil || *doc.StoreBytes == 0 || *doc.StoreBytes > *doc.DatabaseBytes ||
		doc.Runtime.Uploads != 2 || doc.Runtime.UploadBytes != 27 {
		t.Fatalf("stats: %s", r.stdout)
	}
	for _, sqliteOnly := range []string{"wal_bytes", "page_size", "free_pages"} {
		if strings.Contains(r.stdout, sqliteOnly) {
			t.Errorf("stats --json on PostgreSQL reports %s:\n%s", sqliteOnly, r.stdout)
		}
	}
	r = e.run("stats").want(t, 0)
	for _, line := range []string{"governed sessions  4: 2 active, 1 closed, 1 expired\n", "\ndatabase size  ", "\nstore tables  "} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("stats lacks %q:\n%s", line, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "wal file") {
		t.Errorf("stats on PostgreSQL:\n%s", r.stdout)
	}

	r = e.run("doctor").want(t, 0)
	for _, line := range []string{"server       ok", "encoding     ok", "schema       ok", "indexes      ok", "constraints  ok",
		"foreign_keys  ok", "store        ok", "is healthy"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("doctor output lacks %q:\n%s", line, r.stdout)
		}
	}

	before := fileState(t, e.db)
	e.run("backup", filepath.Join(e.dir, "b.db")).want(t, exitError).oneLineErr(t, "backup is not supported on PostgreSQL: use pg_dump")
	e.run("cleanup", "--vacuum").want(t, exitError).oneLineErr(t, "--vacuum is not supported on PostgreSQL")
	e.run("demo", "--fresh").want(t, exitError).oneLineErr(t, "demo --fresh is not supported on PostgreSQL")
	sameFiles(t, before, fileState(t, e.db))

	r = e.run("cleanup", "--json").want(t, 0)
	if strings.TrimSpace(r.stdout) != "{\n  \"removed\": 2\n}" {
		t.Errorf("cleanup --json: %s", r.stdout)
	}
	if r := e.run("cleanup").want(t, 0); r.stdout != "removed 0 closed or expired governed sessions\n" {
		t.Errorf("cleanup: %q", r.stdout)
	}
}

// TestPGDoctorFindsDamage: rows that bypassed a foreign key, a foreign key
// added NOT VALID, an invalid index and a newer schema make doctor fail.
func TestPGDoctorFindsDamage(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	// As replication does, skip the foreign-key triggers for one insert.
	e.pgExec(`SET session_replication_role = replica;
		INSERT INTO governed_use_requests (session_id, request_id, tools, outcome, created_at_ms) VALUES ('ghost', 'r', '{}', 'ok', 0)`)
	r := e.run("doctor").want(t, exitError).oneLineErr(t, "is unhealthy")
	if !strings.Contains(r.stdout, "foreign_keys  fail    1 row violate foreign keys (a row of governed_use_requests refers to a missing row of governed_sessions)") {
		t.Errorf("doctor output:\n%s", r.stdout)
	}
	if r := e.run("doctor", "--quick").want(t, 0); !strings.Contains(r.stdout, "orphan-row scan skipped (--quick)") {
		t.Errorf("doctor --quick:\n%s", r.stdout)
	}
	e.pgExec(`DELETE FROM governed_use_requests WHERE session_id = 'ghost'`)
	e.run("doctor").want(t, 0)

	e.pgExec(`ALTER TABLE governed_use_requests ADD CONSTRAINT extra_fk FOREIGN KEY (session_id) REFERENCES governed_sessions (id) NOT VALID`)
	r = e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "constraints   fail    1 foreign key not validated: extra_fk") {
		t.Errorf("doctor with a NOT VALID foreign key:\n%s", r.stdout)
	}
	e.pgExec(`ALTER TABLE governed_use_requests DROP CONSTRAINT extra_fk`)

	e.pgExec(`UPDATE pg_catalog.pg_index SET indisvalid = false WHERE indexrelid = 'governed_sessions_agent'::regclass`)
	r = e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "indexes       fail    1 invalid index (governed_sessions_agent...)") {
		t.Errorf("doctor with an invalid index:\n%s", r.stdout)
	}
	e.pgExec(`UPDATE pg_catalog.pg_index SET indisvalid = true WHERE indexrelid = 'governed_sessions_agent'::regclass`)
	e.run("doctor").want(t, 0)

	// A schema migrated by a newer binary: refused, reported, untouched.
	e.pgExec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`)
	before := fileState(t, e.db)
	for _, args := range [][]string{{"list"}, {"stats"}, {"use", "s", "--tool", "t"}, {"migrate", "up"}} {
		e.run(args...).want(t, exitSchemaTooNew).oneLineErr(t, "database schema is newer than this binary (database version 9999")
	}
	if r := e.run("doctor").want(t, exitError); !strings.Contains(r.stdout, "version 9999 is newer than this binary") || strings.Contains(r.stdout, "store ") {
		t.Errorf("doctor on a newer schema:\n%s", r.stdout)
	}
	if r := e.run("migrate", "status").want(t, exitSchemaTooNew); !strings.Contains(r.stdout, "the database is newer than this binary") {
		t.Errorf("migrate status on a newer schema:\n%s", r.stdout)
	}
	sameFiles(t, before, fileState(t, e.db))
}
