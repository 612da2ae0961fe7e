package main

import (
	"strings"
	"testing"
)

// doctor checks the tables of every facet: a missing one fails, one of no
// facet is a warning.
func TestDoctorTables(t *testing.T) {
	t.Parallel()
	bothBackends(t, testDoctorTables)
}

func testDoctorTables(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	r := e.run("doctor").want(t, 0)
	if !strings.Contains(r.stdout, "tables        ok      26 tables of 5 facets (governance 4, runtime 5, conversations 10, agent_sessions 5, audit 2) and the migration table\n") {
		t.Errorf("doctor:\n%s", r.stdout)
	}
	exec := func(q string) {
		if e.pg {
			e.pgExec(q)
			return
		}
		db := rawDB(t, e.db)
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE notes (id INTEGER)")
	r = e.run("doctor").want(t, 0)
	if !strings.Contains(r.stdout, "tables        warn    1 table of no facet: notes\n") {
		t.Errorf("doctor with an extra table:\n%s", r.stdout)
	}
	exec("DROP TABLE agent_user_state")
	r = e.run("doctor").want(t, exitError)
	if !strings.Contains(r.stdout, "tables        fail    1 table missing: agent_user_state (agent_sessions)\n") || strings.Contains(r.stdout, "store ") {
		t.Errorf("doctor with a missing table:\n%s", r.stdout)
	}
}
