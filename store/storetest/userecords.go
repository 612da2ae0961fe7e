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
	if got[0].SessionID != s.ID {
		t.Errorf("record of session %q, want %q", got[0].SessionID, s.ID)
	}

	// A refusal on the other session, a day later (it has expired).
	e.clock.Advance(24 * time.Hour)
	if err := use(other.ID, "y", "read"); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("expired refusal: %v", err)
	}
	refusals, err := ur.RecentRefusals(e.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(refusals) != 2 || refusals[0].SessionID != other.ID || refusals[0].Outcome != store.UseExpired ||
		refusals[1].SessionID != s.ID || refusals[1].RequestID != "r2" {
		t.Errorf("recent refusals %+v, want y (expired) then r2 (budget)", refusals)
	}
	if one, err := ur.RecentRefusals(e.ctx, 1); err != nil || len(one) != 1 || one[0].RequestID != "y" {
		t.Errorf("recent refusals, limit 1: %+v, %v", one, err)
	}
	counts, err := ur.UseOutcomes(e.ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	day0 := s.CreatedAt.UTC().Truncate(24 * time.Hour)
	want := []store.UseOutcomeCount{{Day: day0, Outcome: store.UseBudget, Count: 1}, {Day: day0, Outcome: store.UseOK, Count: 3},
		{Day: day0.Add(24 * time.Hour), Outcome: store.UseExpired, Count: 1}}
	if len(counts) != len(want) {
		t.Fatalf("outcome counts %+v, want %+v", counts, want)
	}
	for i := range want {
		if !counts[i].Day.Equal(want[i].Day) || counts[i].Outcome != want[i].Outcome || counts[i].Count != want[i].Count {
			t.Errorf("outcome count %d: %+v, want %+v", i, counts[i], want[i])
		}
	}
	if later, err := ur.UseOutcomes(e.ctx, day0.Add(24*time.Hour)); err != nil || len(later) != 1 {
		t.Errorf("outcome counts since the second day: %+v, %v", later, err)
	}

	empty, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: "missing"})
	if err != nil || len(empty.Items) != 0 || empty.Next != "" {
		t.Errorf("missing session: %+v, %v", empty, err)
	}
	if _, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: s.ID, Cursor: "junk"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("bad cursor: %v, want ErrInvalidInput", err)
	}
}
