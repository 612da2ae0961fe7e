package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

func TestSearchCommand(t *testing.T) {
	t.Parallel()
	bothBackends(t, testSearchCommand)
}

func testSearchCommand(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.convFixture()
	// A hostile message: terminal escapes and markup are data.
	st := e.openStore()
	if _, err := st.Conversations().Save(context.Background(), store.NewConversation("evil")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(context.Background(), "evil", store.UserMessage("flaky \x1b[31mred\x1b[0m <script>x</script>")); err != nil {
		t.Fatal(err)
	}
	st.Close()

	r := e.run("search", "flaky").want(t, 0)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KIND") || !strings.Contains(r.stdout, "«flaky»") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, `\x1b[31mred`) {
		t.Fatalf("control characters not escaped:\n%q", r.stdout)
	}

	r = e.run("search", "--json", "--kind", "message", "--window", "1", "Parser", "flaky").want(t, 0)
	var res store.SearchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].SessionID != "c1" || res.Hits[0].Seq != 0 || len(res.Hits[0].Window) != 2 {
		t.Fatalf("--json: %+v", res)
	}
	m := res.Hits[0].Snippet.Matches
	if len(m) != 2 || res.Hits[0].Snippet.Text[m[0].Start:m[0].End] != "parser" {
		t.Fatalf("matches: %+v", res.Hits[0].Snippet)
	}
	// Tool names, trace names, artifacts and runs are found too.
	r = e.run("search", "--json", "read_file").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	kinds := map[store.SearchKind]int{}
	for _, h := range res.Hits {
		kinds[h.Kind]++
	}
	if kinds[store.SearchMessage] != 1 || kinds[store.SearchTrace] != 1 || kinds[store.SearchArtifact] != 1 {
		t.Fatalf("read_file hits by kind: %v", kinds)
	}
	if r := e.run("search", "nothing-like-this"); r.code != 0 || r.stdout != "no matches\n" {
		t.Fatalf("no match: %d %q", r.code, r.stdout)
	}
	r = e.run("search", "--limit", "1", "flaky").want(t, 0)
	if !strings.Contains(r.stdout, "more: --after ") {
		t.Fatalf("paging:\n%s", r.stdout)
	}
	e.run("search").want(t, exitUsage)
	e.run("search", "--order", "best", "x").want(t, exitUsage)
	e.run("search", "--kind", "nope", "x").want(t, exitUsage)
	e.run("search", "--after", "garbage", "x").want(t, exitUsage)

	// reindex --check, damage, reindex, --check again.
	e.run("reindex", "--check").want(t, 0)
	e.execSQL(`DELETE FROM search_docs WHERE kind = 'message' AND owner = 'c1'`)
	r = e.run("reindex", "--check")
	if r.code != exitError || !strings.Contains(r.stdout, "run sessionctl reindex") {
		t.Fatalf("damaged index: %d\n%s", r.code, r.stdout)
	}
	r = e.run("doctor")
	if !strings.Contains(r.stdout, "search_index") || !strings.Contains(r.stdout, "run sessionctl reindex") {
		t.Fatalf("doctor does not report the index:\n%s", r.stdout)
	}
	r = e.run("reindex", "--batch", "2", "--json").want(t, 0)
	var rr store.ReindexResult
	if err := json.Unmarshal([]byte(r.stdout), &rr); err != nil || rr.Items == 0 {
		t.Fatalf("reindex --json: %v %s", err, r.stdout)
	}
	e.run("reindex", "--check").want(t, 0)
	e.run("reindex", "--batch", "0").want(t, exitUsage)
}
