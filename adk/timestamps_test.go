package adk_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"
)

// TestAfterIsExactToTheNanosecond: events a few nanoseconds apart (as
// ADK's in-memory service keeps them) are told apart by After, which
// selects the events at or after it exactly, as the in-memory service
// does.
func TestAfterIsExactToTheNanosecond(t *testing.T) {
	svc, _ := openService(t)
	mem := session.InMemoryService()
	ctx := context.Background()
	base := time.Date(2026, 2, 3, 4, 5, 6, 7_000_100, time.UTC)
	for _, s := range []session.Service{svc, mem} {
		created, err := s.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			ev := &session.Event{ID: "e" + strconv.Itoa(i), Author: "user", Timestamp: base.Add(time.Duration(i) * 3)}
			if err := s.AppendEvent(ctx, created.Session, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func(s session.Service, after time.Time) string {
		t.Helper()
		got, err := s.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", After: after})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for ev := range got.Session.Events().All() {
			out = append(out, ev.ID+"@"+strconv.Itoa(ev.Timestamp.Nanosecond()))
		}
		return strings.Join(out, ",")
	}
	for d := range 18 {
		after := base.Add(time.Duration(d) - 1)
		if got, want := ids(svc, after), ids(mem, after); got != want {
			t.Fatalf("After %v: %s, in-memory service %s", after, got, want)
		}
	}
	if got := ids(svc, base.Add(4)); got != "e2@7000106,e3@7000109,e4@7000112,e5@7000115" {
		t.Fatalf("After base+4ns: %s", got)
	}
}
