package sqlstore

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// BenchmarkReadFloor measures what the pure-Go SQLite driver itself costs
// for the agent-session reads that issue 15 compares with ADK, with no
// store code on the way: the statements the store runs (same columns,
// same indexes, a database the store wrote), prepared once on one read
// connection, stepping every row and taking every column's value from the
// driver, and nothing else (no database/sql, no decoding, no state). The store's figures cannot go below these, so they
// bound the ratio any change of the store's code can reach:
//
//	go test ./sqlstore -run '^$' -bench 'ReadFloor' -benchtime 2s
//
// It also times the store's own call on the same database (store=...), so
// that one run shows the floor and the store's distance from it.
//
//   - list/sessions=10000: one user's 10,000 sessions (the listing
//     columns, keyset order), as ListSessions pages through them.
//   - events=1000: the 1,000 events of one session, each about 1 KiB.
//   - events=1000/data-only: the same, their data column alone (as the
//     ADK adapter reads them: store.GetAgentSessionRequest.EventDataOnly).
//   - events=1000/recent=100: the 100 most recent of those.
func BenchmarkReadFloor(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "floor.db")
	st, err := Open(ctx, path, WithSynchronous(SyncNormal))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()
	const sessions, events = 10_000, 1_000
	for i := range sessions {
		key := store.SessionKey{App: "bench", User: "u", Session: fmt.Sprintf("s-%05d", i)}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
			State: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage("0")}}}); err != nil {
			b.Fatal(err)
		}
	}
	big := store.SessionKey{App: "bench", User: "v", Session: "big"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: big}); err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum dolor sit amet ", 32) // ~860 bytes of text part
	for i := range events {
		data, err := json.Marshal(map[string]any{
			"author":  "assistant",
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: big, Event: store.AgentEvent{
			ID: fmt.Sprintf("ev-%d", i), InvocationID: fmt.Sprintf("inv-%d", i/4), Data: data,
			Timestamp: time.Unix(1_700_000_000, int64(i)*1000)}}); err != nil {
			b.Fatal(err)
		}
	}

	cfg := defaultConfig()
	db, err := sqlx.Open(driverName, readDSN(path, &cfg))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var pk int64
	if err := db.Get(&pk, `SELECT pk FROM agent_sessions WHERE app = 'bench' AND user_id = 'v' AND session_id = 'big'`); err != nil {
		b.Fatal(err)
	}

	// floor runs query on the driver's connection, prepared once, and
	// takes every column of every row as the driver produces it: no
	// database/sql, no conversion, nothing decoded.
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	floor := func(b *testing.B, want int, query string, args ...any) {
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				b.Fatal(err)
			}
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
		}
		err := conn.Raw(func(dc any) error {
			st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
			if err != nil {
				return err
			}
			defer st.Close()
			b.ReportAllocs()
			for b.Loop() {
				rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, named)
				if err != nil {
					return err
				}
				vals := make([]driver.Value, len(rows.Columns()))
				n := 0
				for rows.Next(vals) == nil {
					n++
				}
				if err := rows.Close(); err != nil || n != want {
					return fmt.Errorf("%d rows, want %d: %v", n, want, err)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("list/sessions=10000/floor", func(b *testing.B) {
		floor(b, sessions, `SELECT pk, user_id, session_id, version, event_count, created_at_ms, updated_at_ms
			FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id > ? ORDER BY session_id LIMIT ?`,
			"bench", "u", "", sessions)
	})
	b.Run("list/sessions=10000/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			req := store.ListAgentSessionsRequest{App: "bench", User: "u", Limit: store.MaxPageSize}
			for {
				p, err := as.ListSessions(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				n += len(p.Items)
				if p.Next == "" {
					break
				}
				req.Cursor = p.Next
			}
			if n != sessions {
				b.Fatalf("%d sessions", n)
			}
		}
	})
	b.Run("events=1000/floor", func(b *testing.B) {
		floor(b, events, `SELECT seq, event_id, invocation_id, ts_us, data FROM agent_events
			WHERE session_pk = ? ORDER BY seq`, pk)
	})
	b.Run("events=1000/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: big, IncludeEvents: true})
			if err != nil || len(s.Events) != events {
				b.Fatal(err)
			}
		}
	})
	// The adapter's read: the data column alone (EventDataOnly).
	b.Run("events=1000/data-only/floor", func(b *testing.B) {
		floor(b, events, `SELECT CAST(data AS BLOB) FROM agent_events WHERE session_pk = ? ORDER BY seq DESC`, pk)
	})
	b.Run("events=1000/data-only/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: big, IncludeEvents: true, EventDataOnly: true})
			if err != nil || len(s.Events) != events {
				b.Fatal(err)
			}
		}
	})
	b.Run("events=1000/recent=100/floor", func(b *testing.B) {
		floor(b, 100, `SELECT seq, event_id, invocation_id, ts_us, data FROM agent_events
			WHERE session_pk = ? ORDER BY seq DESC LIMIT 100`, pk)
	})
	b.Run("events=1000/recent=100/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: big, IncludeEvents: true, Recent: 100})
			if err != nil || len(s.Events) != 100 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSmallList times listing a user's 10 sessions (with their state)
// through the facet, the small listing of issue 15's table, beside the
// agent-session read that costs the least (a session without events), so
// that the fixed cost of a read transaction shows:
//
//	go test ./sqlstore -run '^$' -bench SmallList -benchtime 2s
func BenchmarkSmallList(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(b.TempDir(), "small.db"), WithSynchronous(SyncNormal))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()
	for i := range 10 {
		key := store.SessionKey{App: "bench", User: "small", Session: fmt.Sprintf("s-%02d", i)}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
			State: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage("0")}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("list/sessions=10", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := as.ListSessions(ctx, store.ListAgentSessionsRequest{App: "bench", User: "small", Limit: store.MaxPageSize})
			if err != nil || len(p.Items) != 10 {
				b.Fatal(len(p.Items), err)
			}
		}
	})
	b.Run("get/events=0", func(b *testing.B) {
		b.ReportAllocs()
		key := store.SessionKey{App: "bench", User: "small", Session: "s-00"}
		for b.Loop() {
			if _, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
