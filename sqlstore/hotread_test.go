package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// TestHotReadsOwnTheirBytes reads events and state through the hot path
// (below database/sql, keeping the driver's []byte of each row) and checks
// that every row kept its own bytes: nothing a later row or a later read
// wrote shows through, and a caller changing what it got changes nothing
// stored. It fails if the driver ever reused a row's buffer.
func TestHotReadsOwnTheirBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("volume test: skipped by -short (go test and ./test.sh run it)")
	}
	ctx := context.Background()
	for _, open := range []struct {
		name string
		open func(t *testing.T, path string) (*Store, error)
	}{
		{"Open", func(t *testing.T, path string) (*Store, error) { return Open(ctx, path) }},
		{"ReadOnly", func(t *testing.T, path string) (*Store, error) { return Open(ctx, path, WithReadOnly(true)) }},
		// A pool the caller opened: the hot path prepares per call.
		{"OpenDB", func(t *testing.T, path string) (*Store, error) {
			db, err := sql.Open(driverName, "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { db.Close() })
			return OpenDB(ctx, db)
		}},
	} {
		t.Run(open.name, func(t *testing.T) {
			path := FreshDBPath(t, "hot.db")
			w, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			key := store.SessionKey{App: "app", User: "u", Session: "s"}
			want := make([]string, 300)
			if _, err := w.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
				State: store.ScopedState{Session: map[string]json.RawMessage{"a": json.RawMessage(`"x"`), "b": json.RawMessage(`[1,2]`)}}}); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				// Sizes vary so that a reused buffer would show.
				want[i] = fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("z", (i*37)%900))
				if _, err := w.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
					Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: json.RawMessage(want[i])}}); err != nil {
					t.Fatal(err)
				}
			}
			st := w
			if open.name != "Open" {
				if st, err = open.open(t, path); err != nil {
					t.Fatal(err)
				}
				defer st.Close()
			}
			as := st.AgentSessions()
			check := func() {
				t.Helper()
				s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Events) != len(want) {
					t.Fatalf("%d events, want %d", len(s.Events), len(want))
				}
				for i, ev := range s.Events {
					if string(ev.Data) != want[i] || ev.ID != fmt.Sprintf("e%d", i) || ev.Seq != int64(i+1) {
						t.Fatalf("event %d: %s %d %.40s, want e%d %.40s", i, ev.ID, ev.Seq, ev.Data, i, want[i])
					}
				}
				if got := string(s.State.Session["a"]) + string(s.State.Session["b"]); got != `"x"[1,2]` {
					t.Fatalf("state %s", got)
				}
				// The caller owns what it got: scribbling over it changes
				// nothing that is read next.
				for _, ev := range s.Events {
					copy(ev.Data, bytes.Repeat([]byte{'#'}, len(ev.Data)))
				}
				for _, v := range s.State.Session {
					copy(v, "##")
				}
			}
			check()
			check()
			page, err := as.ListEvents(ctx, store.ListEventsRequest{Key: key, Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for i, ev := range page.Items {
				if string(ev.Data) != want[i] {
					t.Fatalf("page event %d: %.40s, want %.40s", i, ev.Data, want[i])
				}
			}
		})
	}
}

// TestValueRowsScan pins what the hot path scans into, and that any other
// destination or a column of another type is an error, not a wrong value.
func TestValueRowsScan(t *testing.T) {
	r := &valueRows{vals: []driver.Value{int64(7), "text", []byte("blob"), nil}}
	var n int64
	var s string
	var b, nb []byte
	if err := r.Scan(&n, &s, &b, &nb); err != nil {
		t.Fatal(err)
	}
	if n != 7 || s != "text" || string(b) != "blob" || nb != nil {
		t.Fatalf("scanned %d %q %q %v", n, s, b, nb)
	}
	var sb string
	var bs []byte
	if err := (&valueRows{vals: []driver.Value{[]byte("b"), "s"}}).Scan(&sb, &bs); err != nil || sb != "b" || string(bs) != "s" {
		t.Fatalf("text and blob crossed: %q %q %v", sb, bs, err)
	}
	var f float64
	for name, c := range map[string]struct {
		vals []driver.Value
		dest []any
	}{
		"unsupported destination": {[]driver.Value{1.5}, []any{&f}},
		"text into integer":       {[]driver.Value{"7"}, []any{&n}},
		"null into string":        {[]driver.Value{nil}, []any{&s}},
		"too few destinations":    {[]driver.Value{int64(1), int64(2)}, []any{&n}},
	} {
		if err := (&valueRows{vals: c.vals}).Scan(c.dest...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestReadTxHotIsOneSnapshot: the statements of a read transaction begun
// on the driver connection (readTxHot), hot or not, see the database as of
// its first read, whatever commits meanwhile; and a transaction ended by a
// cancelled context leaves its connection out of any transaction (with one
// reader, the next read would otherwise fail to begin).
func TestReadTxHotIsOneSnapshot(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, FreshDBPath(t, "snap.db"), WithReaders(1))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	as := st.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	appendOne := func(id string) {
		t.Helper()
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: id, Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	appendOne("e0")
	const countSQL = `SELECT count(*) FROM agent_events`
	err = st.readTxHot(ctx, func(r *rtx) error {
		var hot, cold int64
		if err := r.QueryHot(countSQL, nil, func(rows sqlcore.Rows) error { return rows.Scan(&hot) }); err != nil {
			return err
		}
		appendOne("e1") // commits while the transaction is open
		if err := r.get(&cold, countSQL); err != nil {
			return err
		}
		var again int64
		if err := r.QueryHot(countSQL, nil, func(rows sqlcore.Rows) error { return rows.Scan(&again) }); err != nil {
			return err
		}
		if hot != 1 || cold != 1 || again != 1 {
			t.Errorf("inside one transaction: %d, %d, %d events; want 1 each", hot, cold, again)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	err = st.readTxHot(cctx, func(r *rtx) error {
		cancel()
		return r.QueryHot(countSQL, nil, func(sqlcore.Rows) error { return nil })
	})
	if err == nil {
		t.Fatal("a read with a cancelled context succeeded")
	}
	s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(s.Events) != 2 {
		t.Fatalf("after a cancelled read: %d events, %v", len(s.Events), err)
	}
}
