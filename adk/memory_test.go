package adk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentstore/sessionstore/store"
)

// The memory service finds a user's past across all of the user's
// sessions in one query, with the events' content, and never another
// user's or app's.
func TestMemorySearchesAcrossSessions(t *testing.T) {
	ctx := context.Background()
	svc, _ := openService(t)
	mem, err := svc.Memory(0)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	say := func(app, user, id string, i int, author, txt string) session.Session {
		t.Helper()
		r, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id})
		var sess session.Session
		if err != nil {
			c, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: id})
			if err != nil {
				t.Fatal(err)
			}
			sess = c.Session
		} else {
			sess = r.Session
		}
		ev := session.NewEvent(ctx, "inv")
		ev.Author = author
		ev.Timestamp = base.Add(time.Duration(i) * time.Minute)
		ev.LLMResponse = model.LLMResponse{Content: genai.NewContentFromText(txt, genai.Role(map[bool]string{true: "user", false: "model"}[author == "user"]))}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	for s := range 5 {
		id := fmt.Sprintf("trip-%d", s)
		say("travel", "ann", id, s*3, "user", fmt.Sprintf("plan %d: I am allergic to peanuts", s))
		say("travel", "ann", id, s*3+1, "planner", "noted, no peanuts on the flight")
		say("travel", "ann", id, s*3+2, "user", "window seat please")
	}
	say("travel", "bob", "b1", 100, "user", "peanuts are fine for me")
	say("dining", "ann", "d1", 101, "user", "peanuts in the salad")

	resp, err := mem.SearchMemory(ctx, &memory.SearchRequest{AppName: "travel", UserID: "ann", Query: "peanuts allergic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Memories) != 5 {
		t.Fatalf("%d memories, want the 5 allergy events", len(resp.Memories))
	}
	sessions := map[any]bool{}
	for _, m := range resp.Memories {
		if m.Author != "user" || m.Content == nil || len(m.Content.Parts) != 1 || m.Timestamp.IsZero() {
			t.Fatalf("memory %+v", m)
		}
		sessions[m.CustomMetadata["session_id"]] = true
	}
	if len(sessions) != 5 {
		t.Fatalf("memories from %d sessions, want 5", len(sessions))
	}
	// An empty query: the user's most recent events, newest first.
	resp, err = mem.SearchMemory(ctx, &memory.SearchRequest{AppName: "travel", UserID: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Memories) != 15 || resp.Memories[0].Content.Parts[0].Text != "window seat please" ||
		resp.Memories[0].CustomMetadata["session_id"] != "trip-4" || !resp.Memories[0].Timestamp.Equal(base.Add(14*time.Minute)) {
		t.Fatalf("recent: %d, first %+v", len(resp.Memories), resp.Memories[0])
	}
	resp, err = mem.SearchMemory(ctx, &memory.SearchRequest{AppName: "travel", UserID: "nobody", Query: "peanuts"})
	if err != nil || len(resp.Memories) != 0 {
		t.Fatalf("another user: %v %v", resp, err)
	}
	// AddSessionToMemory: the store's sessions are indexed already.
	g, err := svc.Get(ctx, &session.GetRequest{AppName: "travel", UserID: "ann", SessionID: "trip-0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.AddSessionToMemory(ctx, g.Session); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.SearchMemory(ctx, &memory.SearchRequest{AppName: "", UserID: "ann", Query: "x"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("no app: %v", err)
	}
}
