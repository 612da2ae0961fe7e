package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// rtFixture writes runtime sessions through the library: r1 (owner o1,
// chat, overrides, two uploads, a turn left running as by a crashed
// process), r2 (owner o2, acp) and r3 (owner o1, acp, a cancelled turn).
func (e *testEnv) rtFixture() {
	t := e.t
	t.Helper()
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	rt := st.Runtime()
	for _, s := range []store.NewRuntimeSession{
		{ID: "r1", AgentAlias: "coder", WorkspaceDir: "/work/r1", ChatMode: store.ChatModeChat, OwnerID: "o1"},
		{ID: "r2", AgentAlias: "coder", WorkspaceDir: "/work/r2", ChatMode: store.ChatModeACP, OwnerID: "o2"},
		{ID: "r3", AgentAlias: "reviewer", WorkspaceDir: "/work/r3", ChatMode: store.ChatModeACP, OwnerID: "o1"},
	} {
		if _, err := rt.Insert(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	model, provider, temp := "model-b", "ollama.default", 0.2
	if _, err := rt.SetOverrides(ctx, "r1", store.Overrides{Model: &model, Provider: &provider, Temperature: &temp}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.PutUploadRequest{
		{SessionID: "r1", RefID: "img-1", Marker: "[image 1]", WorkspacePath: "/work/r1/a.png", Content: []byte("\x89PNG fake image bytes")},
		{SessionID: "r1", RefID: "notes", Marker: "[notes]", WorkspacePath: "/work/r1/notes.txt", Content: []byte("hello\n")},
	} {
		if _, err := rt.PutUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := rt.BeginTurn(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.BeginTurn(ctx, "r3"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Cancel(ctx, "r3", store.CauseAdminKill); err != nil {
		t.Fatal(err)
	}
}

func TestGoldenRuntime(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGoldenRuntime)
}

func testGoldenRuntime(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.rtFixture()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"rt_list", []string{"list", "--facet", "runtime"}},
		{"rt_list_owner_json", []string{"list", "--owner", "o1", "--json"}},
		{"rt_show", []string{"show", "r1"}},
		{"rt_show_json", []string{"show", "r1", "--json"}},
		{"rt_uploads", []string{"uploads", "r1"}},
		{"rt_uploads_json", []string{"uploads", "r1", "--json"}},
		{"rt_upload_content", []string{"uploads", "r1", "--ref", "notes"}},
		{"rt_upload_content_json", []string{"uploads", "r1", "--ref", "notes", "--json"}},
		{"rt_uploads_empty", []string{"uploads", "r2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(c.args...).want(t, 0)
			golden(t, c.name, e.normalize(r.stdout+r.stderr))
		})
	}
}

func TestRuntimeCommands(t *testing.T) {
	t.Parallel()
	bothBackends(t, testRuntimeCommands)
}

func testRuntimeCommands(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.rtFixture()
	e.run("uploads", "nope").want(t, exitNotFound).oneLineErr(t, "not found")
	e.run("uploads", "r1", "--ref", "missing").want(t, exitNotFound).oneLineErr(t, "not found")
	e.run("list", "--owner", "o1", "--parent", "c").want(t, exitUsage).oneLineErr(t, "do not go together")
	e.run("list", "--facet", "runtime", "--status", "active").want(t, exitUsage).oneLineErr(t, "--agent and --status apply to governed sessions, not runtime")
	e.run("list", "--facet", "conversations", "--owner", "o1").want(t, exitUsage).oneLineErr(t, "--owner applies to runtime sessions, not conversations")

	// Paging with the owner filter: r1, then r3.
	var page rtListJSON
	r := e.run("list", "--owner", "o1", "--limit", "1", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != "r1" || page.Next != "r1" {
		t.Fatalf("first page: %s (%v)", r.stdout, err)
	}
	r = e.run("list", "--owner", "o1", "--limit", "1", "--after", "r1", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != "r3" || page.Next != "" {
		t.Fatalf("second page: %s (%v)", r.stdout, err)
	}

	var st statsJSON
	if err := json.Unmarshal([]byte(e.run("stats", "--json").want(t, 0).stdout), &st); err != nil {
		t.Fatal(err)
	}
	want := rtCounts{Total: 3, ByAgent: map[string]int64{"coder": 2, "reviewer": 1}, RunningTurns: 2, Uploads: 2, UploadBytes: 27}
	if st.Runtime.Total != want.Total || st.Runtime.RunningTurns != want.RunningTurns || st.Runtime.Uploads != want.Uploads ||
		st.Runtime.UploadBytes != want.UploadBytes || len(st.Runtime.ByAgent) != 2 || st.Runtime.ByAgent["coder"] != 2 {
		t.Errorf("stats runtime: %+v, want %+v", st.Runtime, want)
	}
	if r := e.run("stats").want(t, 0); !strings.Contains(r.stdout, "runtime sessions   3: 2 coder, 1 reviewer; 2 turns running\nuploads            2, 27 B\n") {
		t.Errorf("stats:\n%s", r.stdout)
	}
}

func TestExportImportRuntime(t *testing.T) {
	t.Parallel()
	bothBackends(t, testExportImportRuntime)
}

func testExportImportRuntime(t *testing.T, newTestEnv envMaker) {
	src := newTestEnv(t)
	src.rtFixture()
	file := filepath.Join(src.dir, "rt.json")
	r := src.run("export", "--output", file).want(t, 0)
	if r.stderr != "exported 3 runtime sessions to "+file+"\n" {
		t.Errorf("export: %q", r.stderr)
	}
	dst := newTestEnv(t)
	dst.clock = src.clock
	r = dst.run("import", file).want(t, 0)
	if r.stdout != "imported 3 runtime sessions from 1 file\n" {
		t.Errorf("import: %q", r.stdout)
	}
	for _, args := range [][]string{
		{"uploads", "r1", "--json"}, {"uploads", "r1", "--ref", "img-1"}, {"uploads", "r1", "--ref", "notes", "--json"},
	} {
		if got, want := dst.run(args...).want(t, 0).stdout, src.run(args...).want(t, 0).stdout; got != want {
			t.Errorf("%v differs after import:\n%s\nwant:\n%s", args, got, want)
		}
	}
	var a, b showJSON
	if err := json.Unmarshal([]byte(src.run("show", "r1", "--json").want(t, 0).stdout), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(dst.run("show", "r1", "--json").want(t, 0).stdout), &b); err != nil {
		t.Fatal(err)
	}
	// Fields, overrides, uploads and the turn's generation carry over; the
	// turn is not running (it belonged to the process that ran it).
	if a.Runtime.AgentAlias != b.Runtime.AgentAlias || a.Runtime.OwnerID != b.Runtime.OwnerID || a.Runtime.WorkspaceDir != b.Runtime.WorkspaceDir ||
		render.Overrides(a.Runtime.Overrides) != render.Overrides(b.Runtime.Overrides) || a.Runtime.Uploads != b.Runtime.Uploads ||
		a.Runtime.UploadBytes != b.Runtime.UploadBytes || b.Runtime.Turn.Running || b.Runtime.Turn.Generation != a.Runtime.Turn.Generation ||
		a.Runtime.Turn.Generation == 0 {
		t.Errorf("runtime session after import:\n%+v\nbefore:\n%+v", b.Runtime, a.Runtime)
	}
	before := fileState(t, dst.db)
	dst.run("import", file).want(t, exitConflict).oneLineErr(t, "runtime session r1 exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	if r := dst.run("import", file, "--skip-existing").want(t, 0); !strings.HasSuffix(r.stdout, ", 3 existing skipped\n") {
		t.Errorf("skip existing: %q", r.stdout)
	}

	// An upload whose content does not match its digest is refused before
	// anything of the file is written.
	data := src.run("export", "r1").want(t, 0).stdout
	good := base64.StdEncoding.EncodeToString([]byte("hello\n"))
	bad := strings.Replace(data, good, base64.StdEncoding.EncodeToString([]byte("HELLO\n")), 1)
	if bad == data {
		t.Fatal("fixture content not found in the export")
	}
	third := newTestEnv(t)
	third.runStdin(bad, "import", "-").want(t, exitUsage).oneLineErr(t, "sha256: does not match the content")
	third.runStdin(strings.Replace(data, good, "not base64!", 1), "import", "-").want(t, exitUsage).oneLineErr(t, "content_base64: not valid base64")
	if !pgstore.IsURL(third.db) {
		// The refused imports created no file (issue 37): nothing to list.
		if _, err := os.Stat(third.db); !os.IsNotExist(err) {
			t.Errorf("a refused import left a database file: %v", err)
		}
		return
	}
	third.run("list", "--facet", "runtime").want(t, 0)
	if r := third.run("list", "--facet", "runtime"); r.stdout != "no runtime sessions\n" {
		t.Errorf("a refused import wrote: %q", r.stdout)
	}
}
