package main

// doctor decodes every stored document (issue 14, item 5; the list of
// documents per facet is tested in package check): damaged JSON in
// any facet's rows makes it fail and name the rows; gc and cleanup refuse
// to rewrite such a database; a read-only database is reported as such.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// execSQL runs a statement on the env's database, past the store.
func (e *testEnv) execSQL(query string) {
	e.t.Helper()
	if e.pg {
		e.pgExec(query)
		return
	}
	db := rawDB(e.t, e.db)
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

func TestDoctorFindsDamagedDocuments(t *testing.T) {
	t.Parallel()
	bothBackends(t, testDoctorFindsDamagedDocuments)
}

func testDoctorFindsDamagedDocuments(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.fullFixture()
	r := e.run("doctor").want(t, 0)
	if !strings.Contains(r.stdout, "stored documents decode") {
		t.Fatalf("doctor on a sound database:\n%s", r.stdout)
	}
	blob := `UPDATE upload_blobs SET content = X'00', size_bytes = 1 WHERE sha256 = (SELECT sha256 FROM uploads WHERE session_id = 'r1' AND ref_id = 'notes')`
	if e.pg {
		blob = `UPDATE upload_blobs SET content = '\x00'::bytea, size_bytes = 1 WHERE sha256 = (SELECT sha256 FROM uploads WHERE session_id = 'r1' AND ref_id = 'notes')`
	}
	for _, c := range []struct {
		name    string
		damage  string
		restore string
		want    string
	}{
		{"message", `UPDATE conversation_messages SET content = '[{"type": "text", "text": "cut' WHERE session_id = 'c1' AND seq = 1`, "",
			"conversation_messages c1 message 1 (message)"},
		{"agent event", `UPDATE agent_events SET data = 'not json' WHERE id = (SELECT min(id) FROM agent_events)`, "",
			"agent_events "},
		{"app state", `UPDATE agent_app_state SET value = '{' WHERE key = (SELECT min(key) FROM agent_app_state)`, "",
			"agent_app_state "},
		{"run snapshot", `UPDATE conversation_runs SET snapshot = '[]' WHERE run_id = 'run-1'`, "",
			"conversation_runs c1 run run-1 (run snapshot)"},
		{"report", `UPDATE conversation_reports SET report = 'x' WHERE session_id = 'c1' AND seq = 0`, "",
			"conversation_reports c1 report 0 (verification report)"},
		{"tasks", `UPDATE conversations SET tasks = '{"not": "a list"}' WHERE id = 'c1/child'`, "",
			"conversations c1/child (tasks)"},
		{"upload", blob, "", "upload_blobs r1 upload notes (upload content)"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			e.execSQL(c.damage)
			r := e.run("doctor").want(t, exitError)
			if !strings.Contains(r.stdout, "documents") || !strings.Contains(r.stdout, c.want) {
				t.Errorf("doctor does not name %q:\n%s", c.want, r.stdout)
			}
			var doc doctorJSON
			if err := json.Unmarshal([]byte(e.run("doctor", "--json").want(t, exitError).stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Healthy {
				t.Error("doctor --json: healthy")
			}
			before := fileState(t, e.db)
			e.run("gc", "--keep-last", "1").want(t, exitError).oneLineErr(t, "is damaged")
			e.run("cleanup").want(t, exitError).oneLineErr(t, "is damaged")
			sameFiles(t, before, fileState(t, e.db))
		})
	}
}

// TestDoctorReadOnly: an immutable database is reported as one that
// cannot be written (it was "healthy"), and doctor leaves nothing beside
// it.
func TestDoctorReadOnly(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.db = filepath.Join(e.dir, "db", "s.db")
	if err := os.Mkdir(filepath.Dir(e.db), 0o755); err != nil {
		t.Fatal(err)
	}
	e.run("migrate", "up").want(t, 0)
	e.convFixture()
	chattr(t, "+i", e.db)
	t.Cleanup(func() { exec.Command("chattr", "-i", e.db).Run() })
	before := lsDir(t, filepath.Dir(e.db))
	r := e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "write         fail    the database cannot be written") || !strings.Contains(r.stdout, "stored documents decode") {
		t.Errorf("doctor on an immutable database:\n%s", r.stdout)
	}
	if after := lsDir(t, filepath.Dir(e.db)); !slices.Equal(before, after) {
		t.Errorf("files beside the database: %v, before %v", after, before)
	}
}

// TestPGDoctorReadOnly: a session whose transactions are read-only cannot
// write the store, and doctor says so.
func TestPGDoctorReadOnly(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t)
	e.run("migrate", "up").want(t, 0)
	e.run("doctor").want(t, 0)
	e.db += "&default_transaction_read_only=on"
	r := e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "default_transaction_read_only is on") {
		t.Errorf("doctor on a read-only session:\n%s", r.stdout)
	}
}
