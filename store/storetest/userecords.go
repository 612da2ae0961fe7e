package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunUseRecords checks store.UseRecorder where the backend's Governance
// implements it: every Use with a request id is listed once, oldest first,
// with its outcome and the call count it left; paging resumes exactly.
func RunUseRecords(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ur, ok := e.gov().(store.UseRecorder)
	if !ok {
		t.Skip("the backend's Governance does not implement store.UseRecorder")
	}
	req := baseRequest()
	req.CallBudget = 4
	req.AuthorizedTools = []string{"read"}
	s := e.create(req)
	other := e.create(req)
	use := func(id, rid string, tools ...string) error {
		_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: id, RequestID: rid, Tools: tools})
		e.clock.Advance(time.Second)
		return err
	}
	if err := use(s.ID, "r1", "read"); err != nil {
		t.Fatal(err)
	}
	if err := use(s.ID, "r0", "read", "read"); err != nil { // a smaller id, later
		t.Fatal(err)
	}
	if err := use(s.ID, "r2", "read", "read"); !errors.Is(err, store.ErrBudgetExceeded) {
		t.Fatalf("third use: %v, want budget exceeded", err)
	}
	if err := use(s.ID, "", "read"); err != nil { // no request id: not recorded
		t.Fatal(err)
	}
	if err := use(other.ID, "x", "read"); err != nil {
		t.Fatal(err)
	}

	var got []store.UseRecord
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: s.ID, Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.RequestID)
	}
	if !slices.Equal(ids, []string{"r1", "r0", "r2"}) {
		t.Fatalf("records %v, want r1 r0 r2 (time order)", ids)
	}
	if got[0].Outcome != store.UseOK || got[0].CallsMade != 1 || !slices.Equal(got[0].Tools, []string{"read"}) {
		t.Errorf("first record %+v", got[0])
	}
	if got[1].Outcome != store.UseOK || got[1].CallsMade != 3 || len(got[1].Tools) != 2 {
		t.Errorf("second record %+v", got[1])
	}
	if got[2].Outcome != store.UseBudget || got[2].CallsMade != 0 {
		t.Errorf("refused record %+v", got[2])
	}
	if !got[0].CreatedAt.Before(got[1].CreatedAt) || !got[0].CreatedAt.Equal(s.CreatedAt) {
		t.Errorf("times %v %v, created %v", got[0].CreatedAt, got[1].CreatedAt, s.CreatedAt)
	}
	empty, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: "missing"})
	if err != nil || len(empty.Items) != 0 || empty.Next != "" {
		t.Errorf("missing session: %+v, %v", empty, err)
	}
	if _, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: s.ID, Cursor: "junk"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("bad cursor: %v, want ErrInvalidInput", err)
	}
}
