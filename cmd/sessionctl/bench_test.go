package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestBenchJSON(t *testing.T) {
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
}

func TestBenchUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"bench", "--duration", "0s"}, {"bench", "--sync", "OFF"}, {"bench", "extra"}, {"bench", "--nope"}} {
		if code := run(context.Background(), args, &out, &errb); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
