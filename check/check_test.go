package check

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// TestEveryFacetHasDocumentChecks: a registered facet without an entry in
// documentChecks would go unchecked; every check reads a table of its own
// facet.
func TestEveryFacetHasDocumentChecks(t *testing.T) {
	for _, f := range facet.All() {
		checks, ok := documentChecks[f.Name]
		if !ok || len(checks) == 0 {
			t.Errorf("facet %s has no document checks", f.Name)
		}
		for _, c := range checks {
			if !slices.Contains(f.Tables, c.table) {
				t.Errorf("facet %s: check of %s reads a table of another facet", f.Name, c.table)
			}
		}
	}
	if len(documentChecks) != len(facet.All()) {
		t.Errorf("document checks for %d facets, the registry has %d", len(documentChecks), len(facet.All()))
	}
}

func TestReportFailed(t *testing.T) {
	var r Report
	r.Add("a", OK, "fine")
	r.Add("b", Warn, "two\nlines   here")
	if r.Failed() {
		t.Fatal("a report of ok and warn failed")
	}
	if got := r.Results[1].Detail; got != "two lines here" {
		t.Errorf("detail %q is not one line", got)
	}
	r.Add("c", Fail, "broken")
	if !r.Failed() {
		t.Fatal("a report with a failed check did not fail")
	}
}

func TestSchema(t *testing.T) {
	for _, c := range []struct {
		current, latest int64
		want            int
		status          Status
		detail          string
	}{
		{5, 5, 0, OK, "version 5, the same as this binary"},
		{4, 5, -1, Warn, "version 4, this binary has 5: run sessionctl migrate up"},
		{9, 5, 1, Fail, "version 9 is newer than this binary (5): use a newer sessionctl"},
	} {
		var r Report
		if got := r.Schema(c.current, c.latest); got != c.want {
			t.Errorf("Schema(%d, %d) = %d, want %d", c.current, c.latest, got, c.want)
		}
		if want := (Result{"schema", c.status, c.detail}); r.Results[0] != want {
			t.Errorf("Schema(%d, %d): %+v, want %+v", c.current, c.latest, r.Results[0], want)
		}
	}
}

func TestTables(t *testing.T) {
	const v = 1 << 30 // every table of every facet
	all := append(facet.TablesAt(v), []string{}...)
	var r Report
	if !r.Tables(all, v) || r.Results[0].Status != OK {
		t.Fatalf("every table: %+v", r.Results)
	}
	r = Report{}
	if !r.Tables(append(slices.Clone(all), "notes\x1b"), v) || r.Results[0].Status != Warn ||
		r.Results[0].Detail != `1 table of no facet: notes\x1b` {
		t.Fatalf("an extra table: %+v", r.Results)
	}
	f := facet.All()[0]
	missing := f.Tables[0]
	r = Report{}
	if r.Tables(slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == missing }), v) || r.Results[0].Status != Fail ||
		!strings.Contains(r.Results[0].Detail, missing+" ("+string(f.Name)+")") {
		t.Fatalf("a missing table: %+v", r.Results)
	}
}

// fakeRows serves rows per table: the query whose FROM names the table
// gets them.
type fakeRows map[string][][][]byte

func (f fakeRows) EachRow(ctx context.Context, query string, ncols int, fn func(cols [][]byte) error) error {
	words := strings.Fields(query)
	from := words[slices.Index(words, "FROM")+1]
	for _, row := range f[from] {
		if len(row) != ncols {
			return errors.New("wrong column count")
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

func TestDocuments(t *testing.T) {
	ctx := context.Background()
	rows := fakeRows{
		"conversation_messages": {
			{[]byte("c1 message 0"), []byte(`[{"type": "text", "text": "hi"}]`)},
			{[]byte("c1 message 1"), []byte(`[{"type": "text", "text": "cut`)},
		},
		"governed_sessions": {
			{[]byte("s\x1b1"), []byte(`not json`)},
		},
	}
	tables := []string{"conversation_messages", "governed_sessions"}
	d, err := Documents(ctx, rows, tables, false)
	if err != nil {
		t.Fatal(err)
	}
	// governed_sessions is read by three checks (delegation chain, tools,
	// credentials), each over the one damaged row.
	if d.Checked != 5 || d.Damaged != 4 {
		t.Fatalf("checked %d, damaged %d: %v", d.Checked, d.Damaged, d.First)
	}
	if !strings.HasPrefix(d.First[0], `governed_sessions s\x1b1 (delegation chain): `) {
		t.Errorf("first damaged: %q", d.First[0])
	}
	if !strings.HasPrefix(d.First[3], "conversation_messages c1 message 1 (message): ") {
		t.Errorf("damaged message: %q", d.First[3])
	}
	var dmg *DamagedError
	if err := DamagedDocuments(d); !errors.As(err, &dmg) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("DamagedDocuments: %v", err)
	}
	// With typed lists (PostgreSQL) the JSON lists are not read.
	d, err = Documents(ctx, rows, tables, true)
	if err != nil || d.Checked != 2 || d.Damaged != 1 {
		t.Fatalf("typed lists: %+v, %v", d, err)
	}
	// A table the database lacks is not read.
	if d, err := Documents(ctx, rows, nil, false); err != nil || d.Checked != 0 || DamagedDocuments(d) != nil {
		t.Fatalf("no tables: %+v, %v", d, err)
	}
	var r Report
	if r.Documents(ctx, rows, tables, false) || r.Results[0].Status != Fail || !strings.HasPrefix(r.Results[0].Detail, "4 of 5 stored documents do not decode: ") {
		t.Errorf("report: %+v", r.Results)
	}
	r = Report{}
	if !r.Documents(ctx, rows, []string{"agent_events"}, false) || r.Results[0] != (Result{"documents", OK, "0 stored documents decode"}) {
		t.Errorf("report of a sound database: %+v", r.Results)
	}
}

func TestDocumentsReadError(t *testing.T) {
	boom := errors.New("boom")
	src := RowSourceFunc(func(context.Context, string, int, func([][]byte) error) error { return boom })
	var r Report
	if r.Documents(context.Background(), src, []string{"conversations"}, false) || !strings.Contains(r.Results[0].Detail, "read conversations: boom") {
		t.Errorf("a read error: %+v", r.Results)
	}
}

func TestAuditChainRefusesAHeadWithoutEvents(t *testing.T) {
	err := AuditChain(store.AuditHead{AgentID: "a", Seq: 3}, nil)
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("AuditChain: %v, want ErrInvalidInput", err)
	}
}
