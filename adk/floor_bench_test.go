package adk_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// The floor of the comparison's writes (issue 36): what a create and an
// append cost on this machine when nothing but the rows the adapter writes
// is written. floorTarget runs, on the same seeded database and with the
// same connection settings as the store's writer, the very statements a
// create and an append of the adapter run (the store's writer prepares
// the same texts: internal/sqlcore, events.go), prepared once on one
// connection of database/sql and executed with minimal Go: no store, no
// adapter, no group-commit writer, no read cache, no search indexer.
//
// A create (one transaction):
//
//	BEGIN IMMEDIATE
//	INSERT INTO agent_sessions (...) VALUES (...) RETURNING pk
//	  (+ one upsert per key of an initial state, app/user/session scope)
//	SELECT ... the app and user state (the state the create returns)
//	COMMIT
//
// An append of a runner event with a state delta (one transaction):
//
//	BEGIN IMMEDIATE
//	UPDATE agent_sessions SET version = version + 1, ... RETURNING pk, ...
//	INSERT INTO agent_events (...)            (the event's JSON document)
//	INSERT INTO agent_state_log ... ON CONFLICT DO UPDATE   (the key's head, per key)
//	INSERT INTO agent_state_log (...)                      (its value at the event, per key)
//	COMMIT
//
// The schema's triggers (the session row's feed epoch, the tenant checks)
// fire for the floor as for the adapter: they are the schema's.
//
// Encoding: the floor encodes, inside the timed part, exactly the bytes it
// writes: the event with encoding/json (the adapter's json.Marshal of the
// same event, temp: keys of its delta left out) and each delta value. A store of ADK events cannot write
// without them, and ADK's service encodes them too; so adapter ÷ floor is
// what the adapter's and the store's Go code add beyond the encoding.
//
// Concurrent appends (append/writers=4) are batched as the store's writer
// batches them: the goroutine that takes the connection runs every append
// queued meanwhile in one transaction (without savepoints: the floor's
// appends cannot fail one by one), because group commit is this design's
// own answer to concurrent writers (one fsync for a batch at FULL); four
// serialized transactions would be the one-writer floor four times over.
//
// The store's writer leaves checkpoints to a goroutine of its own and
// finishes one between two transactions every few hundred commits; the
// floor's connection does the same copying inline, a PASSIVE checkpoint
// after every floorCheckpointCommits commits (wal_autocheckpoint = 0, as
// on the store's write connection).
type floorTarget struct {
	db   *sql.DB
	conn *sql.Conn
	st   floorStatements

	// lead is the connection: held by the goroutine running a
	// transaction. mu guards queue, the appends waiting for one.
	lead    sync.Mutex
	mu      sync.Mutex
	queue   []*floorOp
	commits int
}

// floorCheckpointCommits is the floor's checkpoint cadence: the store's
// checkpointer's (sqlstore/checkpoint.go, checkpointCommits).
const floorCheckpointCommits = 256

// The texts of the store's writer for a create and an append
// (internal/sqlcore/events.go): the floor prepares the same strings.
var (
	floorInsertSession = sqlcore.Statements["asInsert"]
	floorScopes        = sqlcore.Statements["stScopesGet"]
	floorBump          = sqlcore.Statements["asBump"]
	floorInsertEvent   = sqlcore.Statements["evInsert"]
	floorPutApp        = sqlcore.Statements["stAppPut"]
	floorPutUser       = sqlcore.Statements["stUserPut"]
	floorPutSession    = sqlcore.Statements["stSessionPut"]
	floorLog           = sqlcore.Statements["stLog"]
	floorGet           = sqlcore.Statements["asGet"]
)

// floorTenant is the default tenant, the adapter's.
const floorTenant = ""

type floorStatements struct {
	begin, commit, checkpoint                     *sql.Stmt
	insertSession, scopes, bump, insertEvent, get *sql.Stmt
	putApp, putUser, putSession, log              *sql.Stmt
	all                                           []*sql.Stmt
}

type floorHandle struct {
	app, user, id string
	version       int64
}

// floorOp is one append: the event's row and its delta, encoded.
type floorOp struct {
	h       *floorHandle
	ev      *session.Event
	data    string
	delta   floorDelta
	done    bool
	err     error
	version int64
}

// floorDelta is a delta's values, encoded, per scope, each sorted by key
// (the store writes them in that order).
type floorDelta struct{ app, user, session []floorKV }

type floorKV struct{ key, value string }

// floorDSN is the store's write connection's (sqlstore/migrate.go,
// writeDSN, with the default busy timeout and journal size limit).
func floorDSN(path, sync string) string {
	return "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync +
		")&_pragma=foreign_keys(1)&_pragma=journal_size_limit(67108864)&_txlock=immediate"
}

// openFloor opens the floor on the database in dir at sync.
func openFloor(ctx context.Context, dir, sync string) (benchkit.Target, error) {
	db, err := sql.Open("sqlite", floorDSN(filepath.Join(dir, "sessions.db"), strings.ToUpper(sync)))
	if err != nil {
		return nil, err
	}
	t := &floorTarget{db: db}
	if err := t.prepare(ctx, sync); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *floorTarget) prepare(ctx context.Context, sync string) error {
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return err
	}
	t.conn = conn
	// The store's write connection's own settings (sqlstore/store.go,
	// startWriter).
	for _, p := range []string{"PRAGMA foreign_keys = ON", "PRAGMA busy_timeout = 5000",
		"PRAGMA synchronous = " + strings.ToUpper(sync), "PRAGMA wal_autocheckpoint = 0"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		dst  **sql.Stmt
		text string
	}{
		{&t.st.begin, "BEGIN IMMEDIATE"}, {&t.st.commit, "COMMIT"}, {&t.st.checkpoint, "PRAGMA wal_checkpoint(PASSIVE)"},
		{&t.st.insertSession, floorInsertSession}, {&t.st.scopes, floorScopes}, {&t.st.bump, floorBump},
		{&t.st.insertEvent, floorInsertEvent}, {&t.st.get, floorGet}, {&t.st.putApp, floorPutApp},
		{&t.st.putUser, floorPutUser}, {&t.st.putSession, floorPutSession}, {&t.st.log, floorLog},
	} {
		st, err := conn.PrepareContext(ctx, s.text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", s.text, err)
		}
		*s.dst = st
		t.st.all = append(t.st.all, st)
	}
	return nil
}

// encodeFloorDelta encodes a flat ADK state map as the adapter does
// (encoding/json per value, app:, user: and temp: prefixes), each scope's
// keys sorted.
func encodeFloorDelta(flat map[string]any) (floorDelta, error) {
	var d floorDelta
	if len(flat) == 0 {
		return d, nil
	}
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		if strings.HasPrefix(k, session.KeyPrefixTemp) {
			continue
		}
		b, err := json.Marshal(flat[k])
		if err != nil {
			return d, err
		}
		switch {
		case strings.HasPrefix(k, session.KeyPrefixApp):
			d.app = append(d.app, floorKV{k[len(session.KeyPrefixApp):], string(b)})
		case strings.HasPrefix(k, session.KeyPrefixUser):
			d.user = append(d.user, floorKV{k[len(session.KeyPrefixUser):], string(b)})
		default:
			d.session = append(d.session, floorKV{k, string(b)})
		}
	}
	return d, nil
}

// putState runs the delta's upserts (app, user, then session scope).
func (t *floorTarget) putState(ctx context.Context, app, user string, pk int64, d floorDelta) error {
	for _, kv := range d.app {
		if _, err := t.st.putApp.ExecContext(ctx, app, kv.key, kv.value, floorTenant); err != nil {
			return err
		}
	}
	for _, kv := range d.user {
		if _, err := t.st.putUser.ExecContext(ctx, app, user, kv.key, kv.value, floorTenant); err != nil {
			return err
		}
	}
	for _, kv := range d.session {
		if _, err := t.st.putSession.ExecContext(ctx, pk, kv.key, kv.value, floorTenant); err != nil {
			return err
		}
	}
	return nil
}

// Create implements benchkit.Target.
func (t *floorTarget) Create(ctx context.Context, app, user, id string, state map[string]any) error {
	d, err := encodeFloorDelta(state)
	if err != nil {
		return err
	}
	initial := "{}" // the session scope of the initial state, as one JSON object
	if len(d.session) > 0 {
		m := make(map[string]json.RawMessage, len(d.session))
		for _, kv := range d.session {
			m[kv.key] = json.RawMessage(kv.value)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		initial = string(b)
	}
	t.lead.Lock()
	defer t.lead.Unlock()
	return t.transaction(ctx, func() error {
		now := time.Now().UnixMilli()
		var pk int64
		if err := t.st.insertSession.QueryRowContext(ctx, app, user, id, now, now, initial, floorTenant, now/60000).Scan(&pk); err != nil {
			return err
		}
		if err := t.putState(ctx, app, user, pk, d); err != nil {
			return err
		}
		rows, err := t.st.scopes.QueryContext(ctx, app, user, 0, floorTenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		var scope int64
		var k string
		var v []byte
		for rows.Next() {
			if err := rows.Scan(&scope, &k, &v); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// transaction runs fn between BEGIN IMMEDIATE and COMMIT (ROLLBACK when
// it fails), on the connection the caller holds (t.lead).
func (t *floorTarget) transaction(ctx context.Context, fn func() error) error {
	if _, err := t.st.begin.ExecContext(ctx); err != nil {
		return err
	}
	if err := fn(); err != nil {
		t.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if _, err := t.st.commit.ExecContext(ctx); err != nil {
		return err
	}
	if t.commits++; t.commits%floorCheckpointCommits == 0 {
		var busy, log, copied int64
		if err := t.st.checkpoint.QueryRowContext(ctx).Scan(&busy, &log, &copied); err != nil {
			return err
		}
	}
	return nil
}

// Handle implements benchkit.Target: the session's key and version.
func (t *floorTarget) Handle(ctx context.Context, app, user, id string) (any, error) {
	t.lead.Lock()
	defer t.lead.Unlock()
	var pk, version, count, created, updated int64
	var dk string
	if err := t.st.get.QueryRowContext(ctx, app, user, id, floorTenant).Scan(&pk, &version, &count, &created, &updated, &dk); err != nil {
		return nil, err
	}
	return &floorHandle{app: app, user: user, id: id, version: version}, nil
}

// Append implements benchkit.Target: the event and its delta are encoded,
// queued, and written by whichever caller holds the connection next, with
// every append queued by then, in one transaction.
func (t *floorTarget) Append(ctx context.Context, h any, ev *session.Event) error {
	stored := ev
	for k := range ev.Actions.StateDelta { // temp: keys are not stored
		if strings.HasPrefix(k, session.KeyPrefixTemp) {
			cp := *ev
			cp.Actions.StateDelta = maps.Clone(ev.Actions.StateDelta)
			maps.DeleteFunc(cp.Actions.StateDelta, func(k string, _ any) bool { return strings.HasPrefix(k, session.KeyPrefixTemp) })
			stored = &cp
			break
		}
	}
	data, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	d, err := encodeFloorDelta(ev.Actions.StateDelta)
	if err != nil {
		return err
	}
	op := &floorOp{h: h.(*floorHandle), ev: ev, data: string(data), delta: d}
	t.mu.Lock()
	t.queue = append(t.queue, op)
	t.mu.Unlock()
	t.lead.Lock()
	defer t.lead.Unlock()
	if !op.done {
		t.mu.Lock()
		batch := t.queue
		t.queue = nil
		t.mu.Unlock()
		err := t.transaction(ctx, func() error {
			for _, o := range batch {
				if err := t.append(ctx, o); err != nil {
					return err
				}
			}
			return nil
		})
		for _, o := range batch {
			o.done, o.err = true, err
			if err == nil {
				o.h.version = o.version
			}
		}
	}
	return op.err
}

// append writes one event's rows (the store's appendEvent's statements).
func (t *floorTarget) append(ctx context.Context, o *floorOp) error {
	var pk, count, epoch int64
	var dk string
	err := t.st.bump.QueryRowContext(ctx, time.Now().UnixMilli(), o.h.app, o.h.user, o.h.id, o.h.version, 1, floorTenant).
		Scan(&pk, &o.version, &count, &dk, &epoch)
	if err != nil {
		return fmt.Errorf("bump %s at version %d: %w", o.h.id, o.h.version, err)
	}
	ts := o.ev.Timestamp
	if _, err := t.st.insertEvent.ExecContext(ctx, pk, count, o.ev.ID, o.ev.InvocationID, ts.UnixMicro(), int64(ts.Nanosecond()%1000),
		o.data, 0, 0, floorTenant); err != nil {
		return err
	}
	if err := t.putState(ctx, o.h.app, o.h.user, pk, o.delta); err != nil {
		return err
	}
	for _, kv := range o.delta.session {
		if _, err := t.st.log.ExecContext(ctx, pk, kv.key, count, kv.value, floorTenant); err != nil {
			return err
		}
	}
	return nil
}

// Get, Read and List are not the floor's: it stands beside the write
// workloads only.
func (t *floorTarget) Get(context.Context, string, string, string, int) (int, error) {
	return 0, errors.ErrUnsupported
}

// Read implements benchkit.Target (unsupported: see Get).
func (t *floorTarget) Read(context.Context, string, string, string) (any, int, error) {
	return nil, 0, errors.ErrUnsupported
}

// List implements benchkit.Target (unsupported: see Get).
func (t *floorTarget) List(context.Context, string, string) (int, error) {
	return 0, errors.ErrUnsupported
}

// Close implements benchkit.Target.
func (t *floorTarget) Close() error {
	for _, st := range t.st.all {
		st.Close()
	}
	if t.conn != nil {
		t.conn.Close()
	}
	return t.db.Close()
}
