package main

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionBuildInfo: the VCS revision "go build" stamps into a binary
// built in a git checkout (absent under go test) is printed, shortened, by
// version and --version, in full by version --json, with "modified" for a
// dirty work tree; without build information the version is "(devel)"
// and no revision is printed, unless one was given at link time.
func TestVersionBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	fake := func(settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{
				GoVersion: "go1.99.1",
				Main:      debug.Module{Path: "github.com/agentstore/sessionstore", Version: "v1.2.3"},
				Settings:  settings,
			}, true
		}
	}
	e := newTestEnv(t)
	run := func(bi func() (*debug.BuildInfo, bool), args ...string) result {
		t.Helper()
		return e.runWith(func(g *globals) { g.buildInfo = bi }, "", args...).want(t, 0)
	}
	firstLine := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

	stamped := fake(debug.BuildSetting{Key: "vcs", Value: "git"}, debug.BuildSetting{Key: "vcs.revision", Value: rev},
		debug.BuildSetting{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, debug.BuildSetting{Key: "vcs.modified", Value: "false"})
	for _, args := range [][]string{{"version"}, {"--version"}, {"list", "--version"}} {
		if got, want := firstLine(run(stamped, args...).stdout), "sessionctl v1.2.3 (0123456789ab) go1.99.1 "; !strings.HasPrefix(got, want) {
			t.Errorf("%v: %q, want %q...", args, got, want)
		}
	}
	var doc versionJSON
	if err := json.Unmarshal([]byte(run(stamped, "version", "--json").stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "v1.2.3" || doc.Revision != rev || doc.Modified || doc.GoVersion != "go1.99.1" {
		t.Errorf("version --json: %+v", doc)
	}

	dirty := fake(debug.BuildSetting{Key: "vcs.revision", Value: rev}, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	if got := firstLine(run(dirty, "version").stdout); !strings.HasPrefix(got, "sessionctl v1.2.3 (0123456789ab, modified) ") {
		t.Errorf("modified work tree: %q", got)
	}
	if err := json.Unmarshal([]byte(run(dirty, "version", "--json").stdout), &doc); err != nil || !doc.Modified {
		t.Errorf("version --json of a modified work tree: %+v (%v)", doc, err)
	}

	// As under go test: a (devel) module and no VCS settings.
	bare := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentstore/sessionstore", Version: "(devel)"}}, true
	}
	if got := firstLine(run(bare, "version").stdout); !strings.HasPrefix(got, "sessionctl (devel) go") || strings.Contains(got, "(0") {
		t.Errorf("without VCS information: %q", got)
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	if got := firstLine(run(none, "version").stdout); !strings.HasPrefix(got, "sessionctl (devel) go") {
		t.Errorf("without build information: %q", got)
	}
	if strings.Contains(run(none, "version", "--json").stdout, `"revision"`) {
		t.Error("version --json has a revision without one")
	}

	// A revision given at link time, when Go stamped none; a stamped one
	// wins.
	old := buildRevision
	t.Cleanup(func() { buildRevision = old })
	buildRevision = "fedcba9876543210"
	if got := firstLine(run(bare, "version").stdout); !strings.HasPrefix(got, "sessionctl (devel) (fedcba987654) go") {
		t.Errorf("link-time revision: %q", got)
	}
	if got := firstLine(run(stamped, "version").stdout); !strings.Contains(got, "(0123456789ab)") {
		t.Errorf("stamped revision with a link-time one: %q", got)
	}
}
