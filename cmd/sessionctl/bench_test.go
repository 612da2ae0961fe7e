package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// skipBenchUnderRace skips a test that runs every standard scenario
// through sessionctl bench when the race detector is on. Their seeding
// (10,000 governed sessions, 10,000 messages, 1,000 events, 1,000 agent
// sessions, each on a fresh store) took 400 s (SQLite) and 240 s
// (PostgreSQL) of cmd/sessionctl's race run, for a command that adds no
// concurrency of its own to package loadtest, whose race-run tests run the
// same scenarios (TestRunSQLite: all of them). ./test.sh runs these tests
// without the race detector, in full, after the race run.
func skipBenchUnderRace(t *testing.T) {
	t.Helper()
	if raceOn {
		t.Skip("volume: runs without the race detector in ./test.sh's non-race block")
	}
	if testing.Short() {
		t.Skip("volume: skipped by -short (go test and ./test.sh run it)")
	}
}

func TestBenchJSON(t *testing.T) {
	t.Parallel()
	skipBenchUnderRace(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--db", filepath.Join(dir, "x.db"), "bench", "--duration", "100ms", "--callers", "4", "--json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, out.String())
	}
	if rep.FsyncPerSec <= 0 || len(rep.Results) != len(benchScenarios()) {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Results {
		if r.Ops <= 0 || r.P99Micros < r.P50Micros {
			t.Fatalf("scenario %s: %+v", r.Name, r)
		}
	}
	if rep.Results[1].Callers != 4 {
		t.Fatalf("contended scenario ran with %d callers", rep.Results[1].Callers)
	}
	agent := 0
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "agent-") {
			agent++
			if r.Name == "agent-append" && r.Callers == 4 && r.RatioToF <= 0 {
				t.Fatalf("agent-append/callers=4 without a ratio to F: %+v", r)
			}
		}
	}
	if agent != 5 || rep.Backend != "sqlite" {
		t.Fatalf("%d agent-session scenarios on %q, want 5 on sqlite", agent, rep.Backend)
	}
}

// TestBenchPostgres: bench runs against PostgreSQL (--db postgres://…),
// each scenario in a temporary schema that is dropped afterwards.
func TestBenchPostgres(t *testing.T) {
	t.Parallel()
	skipBenchUnderRace(t)
	e := newPGEnv(t)
	u := postgresURL(t)
	r := e.run("bench", "--duration", "50ms", "--callers", "4", "--json").want(t, exitOK)
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, r.stdout)
	}
	if rep.Backend != "postgres" || len(rep.Results) != len(benchScenarios()) {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Results {
		if r.Ops <= 0 {
			t.Fatalf("scenario %s: %+v", r.Name, r)
		}
	}
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'sessionctl_bench_%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d bench schemas left behind (%v)", left, err)
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"bench", "--duration", "0s"}, {"bench", "--sync", "OFF"}, {"bench", "extra"}, {"bench", "--nope"}} {
		if code := run(context.Background(), args, &out, &errb); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
