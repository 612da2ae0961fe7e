package sqlcore

// Restoring exported records exactly (store.RecordWriter): the rows of the
// conversation, runtime and agent-session facets written as they were
// stored — versions, positions and times included — inside a backend's
// write transaction. The stored forms are the ones the facets' own write
// paths produce (the same validation and encoders); the round-trip tests
// of sessionctl compare what the store API reads back.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const (
	// The rows a record writer inserts are its tenant's, and every
	// INSERT names it (the last parameter), a conversation's children's
	// too (migration 38 dropped SQLite's triggers that copied it).
	convRestoreSQL = `INSERT INTO conversations (` + convColumns + `, tenant, content_sealed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	artifactRestoreSQL = `INSERT INTO conversation_artifacts (session_id, ` + artifactColumns + `, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	runRestoreSQL = `INSERT INTO conversation_runs (session_id, ` + runColumns + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

	rtRestoreSQL = `INSERT INTO runtime_sessions (id, agent_alias, workspace_dir, chat_mode, owner_id,
		model, model_provider, temperature, created_at_ms, last_active_ms, turn_gen, turn_started_ms, turn_owner, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	upRestoreSQL = `INSERT INTO uploads (` + upColumns + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

	// asRestoreSQL restores a session of its own; its initial state is
	// empty ('{}', sealed in an encrypting store) and data_key names its
	// data key ('' = plaintext).
	asRestoreSQL = `INSERT INTO agent_sessions
		(app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms, initial_state, data_key, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, app, user_id, session_id) WHERE retired = 0 DO NOTHING RETURNING pk`
	// The state and session rows are the writer's tenant's (the last
	// parameter; "" for the default tenant).
	stAppRestoreSQL     = `INSERT INTO agent_app_state (app, key, value, tenant) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, app, key) DO NOTHING`
	stAppValueSQL       = `SELECT value FROM agent_app_state WHERE app = ? AND key = ? AND tenant = ?`
	stUserRestoreSQL    = `INSERT INTO agent_user_state (app, user_id, key, value, tenant) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, app, user_id, key) DO NOTHING`
	stUserValueSQL      = `SELECT value FROM agent_user_state WHERE app = ? AND user_id = ? AND key = ? AND tenant = ?`
	stSessionRestoreSQL = `INSERT INTO agent_state_log (session_pk, key, seq, value, tenant) VALUES (?, ?, ` + StateHead + `, ?, ?)`

	asRestoreForkSQL = `INSERT INTO agent_sessions
		(app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms, lineage_parent, fork_seq, initial_state, data_key, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, app, user_id, session_id) WHERE retired = 0 DO NOTHING RETURNING pk`
)

// forkParent decides whether s is restored as a fork: its ForkedFrom
// session exists (restored before it, or already stored) and holds, up
// to the fork point, exactly s's first events (ids, invocation ids, data,
// timestamps, compaction ranges). It returns the row the fork reads from,
// the fork point and the initial state at it; parent 0 restores s as a
// session of its own (always correct, only not shared).
func (w *recordWriter) forkParent(s store.AgentSession) (parent, at int64, initial string, err error) {
	fp := s.ForkedFrom
	if fp == nil || fp.At < 0 || fp.At > int64(len(s.Events)) || fp.Session == s.Key.Session ||
		store.ValidateID("forked_from.session", fp.Session) != nil {
		return 0, 0, "", nil
	}
	p, err := liveNode(w.tx, w.s.tenant, store.SessionKey{App: s.Key.App, User: s.Key.User, Session: fp.Session})
	if errors.Is(err, store.ErrNotFound) {
		return 0, 0, "", nil
	}
	if err != nil || fp.At > p.EventCount {
		return 0, 0, "", err
	}
	a := &AgentSessions{s: w.s}
	segs, err := a.lineage(w.tx, asRow{PK: p.PK, Parent: p.Parent, ForkSeq: p.ForkSeq, DataKey: p.DataKey})
	if err != nil {
		return 0, 0, "", err
	}
	evs, err := a.readAscending(w.tx, segs, 0, int(fp.At), "", false, nil)
	if err != nil || int64(len(evs)) != fp.At {
		return 0, 0, "", err
	}
	for i, ev := range evs {
		mine := s.Events[i]
		if ev.ID != mine.ID || ev.InvocationID != mine.InvocationID || string(ev.Data) != string(mine.Data) ||
			!ev.Timestamp.Equal(mine.Timestamp) || (ev.Compaction == nil) != (mine.Compaction == nil) ||
			ev.Compaction != nil && *ev.Compaction != *mine.Compaction {
			return 0, 0, "", nil
		}
	}
	o, err := owner(w.tx, p, fp.At)
	if err != nil {
		return 0, 0, "", err
	}
	st, err := w.s.stateAt(w.tx, p, fp.At)
	if err != nil {
		return 0, 0, "", err
	}
	return o.PK, fp.At, encodeSessionState(st), nil
}

// recordWriter is the store.RecordWriter of one restore transaction.
type recordWriter struct {
	ctx      context.Context // the restore's, for the keyring's writes
	s        *Store          // its tenant is the tenant the records are written to
	tx       Tx
	governed func(tenant string, sess store.Session) (bool, error)
	now      time.Time
	// made lists the data keys this restore created (shared by the
	// writers of its tenants): DiscardRestoreKeys shreds them when the
	// transaction does not commit.
	made *[]*keys.DataKey
}

// NewRecordWriter returns the store.RecordWriter of a restore running in
// tx under ctx; governed writes a governed session of a tenant (the
// backend's own facet). The writer writes s's tenant's records; its
// ForTenant writes another tenant's in the same transaction
// (store.TenantRecordWriter).
func (s *Store) NewRecordWriter(ctx context.Context, tx Tx, governed func(tenant string, sess store.Session) (bool, error)) store.RecordWriter {
	return &recordWriter{ctx: ctx, s: s, tx: tx, governed: governed, now: s.now(), made: new([]*keys.DataKey)}
}

// DiscardRestoreKeys shreds the data keys the restore of w (a writer of
// NewRecordWriter) created, once its transaction is known not to commit
// (its function failed: a bad record, a dry run): no row names them, and
// an import that changes nothing leaves no key behind either.
func (s *Store) DiscardRestoreKeys(ctx context.Context, w store.RecordWriter) {
	rw, ok := w.(*recordWriter)
	if !ok {
		return
	}
	for _, dk := range *rw.made {
		s.discardKey(ctx, dk)
	}
	*rw.made = nil
}

// newKey is newDataKey for a record of the restore, which remembers it
// (DiscardRestoreKeys).
func (w *recordWriter) newKey(ctx context.Context) (*keys.DataKey, error) {
	dk, err := w.s.newDataKey(ctx)
	if dk != nil {
		*w.made = append(*w.made, dk)
	}
	return dk, err
}

// ForTenant returns the writer of tenant's records in the same
// transaction (see store.TenantRecordWriter). Where the tenant columns
// take their default from a setting of the transaction (PostgreSQL,
// Config.TenantSQL), it sets it: the rows a record writes without naming
// the tenant take it, and the writes of the default tenant's records must
// come before (the export document puts the tenants last).
func (w *recordWriter) ForTenant(tenant string) (store.RecordWriter, error) {
	if err := store.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	if w.s.cfg.TenantSQL != "" {
		if _, err := w.tx.Exec(w.s.cfg.TenantSQL, tenant); err != nil {
			return nil, err
		}
	}
	return &recordWriter{ctx: w.ctx, s: w.s.WithTenant(tenant), tx: w.tx, governed: w.governed, now: w.now, made: w.made}, nil
}

func (w *recordWriter) PutGovernedSession(sess store.Session) (bool, error) {
	if err := sess.ValidateStored(); err != nil {
		return false, err
	}
	return w.governed(w.s.tenant, sess)
}

// or returns t, or the restore's time when t is zero, in stored form.
func (w *recordWriter) or(t time.Time) int64 {
	if t.IsZero() {
		t = w.now
	}
	return rowcodec.ToMillis(t)
}

// affected reports whether res changed a row.
func affected(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	return n > 0, err
}

// positions returns the stored position of each of n items whose given
// positions are seq(i): as given, or from 0 when all are zero.
func positions(n int, seq func(i int) int64) []int64 {
	out := make([]int64, n)
	allZero := true
	for i := range n {
		out[i] = seq(i)
		allZero = allZero && out[i] == 0
	}
	if allZero {
		for i := range out {
			out[i] = int64(i)
		}
	}
	return out
}

func (w *recordWriter) PutConversation(rec store.ConversationRecord) (bool, error) {
	given := rec.Conversation
	conv, contents, err := store.NormalizeConversation(given)
	if err != nil {
		return false, err
	}
	version := max(given.Version, 1)
	seqs := positions(len(given.Messages), func(i int) int64 { return given.Messages[i].Seq })
	for i := range seqs {
		if seqs[i] < 0 || i > 0 && seqs[i] != seqs[0]+int64(i) {
			return false, store.Invalid(fmt.Sprintf("messages[%d].seq", i), "positions must run on from the first without gaps")
		}
	}
	for i, m := range conv.Messages {
		if m.Compaction != nil && m.Compaction.To >= seqs[i] {
			return false, store.Invalid(fmt.Sprintf("messages[%d].compaction", i), "must cover earlier positions")
		}
	}
	if given.MessageCount != 0 && given.MessageCount != int64(len(seqs)) {
		return false, store.Invalid("message_count", fmt.Sprintf("is %d, but the conversation has %d messages", given.MessageCount, len(seqs)))
	}
	toolNames, err := json.Marshal(conv.ToolNames)
	if err != nil {
		return false, store.Invalid("tool_names", "cannot be encoded as JSON")
	}
	tasks, err := json.Marshal(conv.Tasks)
	if err != nil {
		return false, store.Invalid("tasks", "cannot be encoded as JSON")
	}
	var llm any
	if conv.LLMConfig != nil {
		b, err := json.Marshal(conv.LLMConfig) // never the API key: it has no JSON name
		if err != nil {
			return false, store.Invalid("llm_config", "cannot be encoded as JSON")
		}
		llm = string(b)
	}
	traces := make([][]byte, len(rec.Traces))
	for i, ev := range rec.Traces {
		if traces[i], err = rowcodec.EncodeTraceEvent(fmt.Sprintf("traces[%d]", i), ev); err != nil {
			return false, err
		}
	}
	reports := make([][]byte, len(rec.Reports))
	for i, r := range rec.Reports {
		if reports[i], err = rowcodec.EncodeVerificationReport(fmt.Sprintf("reports[%d]", i), r); err != nil {
			return false, err
		}
	}
	for i := range rec.Artifacts {
		if err := rec.Artifacts[i].Validate(fmt.Sprintf("artifacts[%d]", i)); err != nil {
			return false, err
		}
	}
	if err := w.s.lockKey(w.tx, lockClassConversation, conv.ID); err != nil {
		return false, err
	}
	// Restored encrypted by a store with a keyring, under a data key of
	// its own, as on Save (conv_crypt.go), its session data sealed
	// (conv_row_crypt.go).
	dk, err := w.newKey(context.Background())
	if err != nil {
		return false, err
	}
	cfg, u := conv.Config, conv.TotalUsage
	created := w.or(conv.CreatedAt)
	updated := w.or(conv.UpdatedAt)
	cc := newContentCols(cfg, tasks)
	cc.seal(dk)
	res, err := w.tx.Exec(convRestoreSQL,
		conv.ID, version, cfg.Name, cfg.Workspace, cc.SystemPrompt, cfg.MaxContextLength, cfg.AutoCompact,
		cfg.AutoCompactThreshold, cfg.StorageType, nullStr(cc.QueueConfig), nullStr(cc.ConfirmationPolicy),
		nullStr(cc.PermissionPolicy), cfg.ParentID, nullStr(cc.SecurityConfig), cfg.PlanningMode,
		cfg.GoalTracking, string(conv.State),
		conv.ContextUsage.UsedTokens, conv.ContextUsage.MaxTokens, conv.ContextUsage.Percent, conv.ContextUsage.Turns,
		u.PromptTokens, u.CompletionTokens, u.TotalTokens, nullInt(u.CacheReadTokens), nullInt(u.CacheWriteTokens),
		conv.TotalCost, conv.ModelName, string(toolNames), conv.ThinkingEnabled, nullInt(conv.ThinkingBudget),
		llm, cc.Tasks, conv.ParentID, int64(len(seqs)), created, updated, w.s.tenant, cc.ContentSealed)
	if err != nil {
		w.s.discardKey(context.Background(), dk)
		return false, err
	}
	if ok, err := affected(res); !ok || err != nil {
		w.s.discardKey(context.Background(), dk) // not created: the key names nothing
		return false, err
	}
	id := conv.ID
	if err := setConvKey(w.tx, id, dk); err != nil {
		return false, err
	}
	// A fork whose lineage parent holds the same messages up to the fork
	// point is restored as a fork of it (conv_lineage.go); else flat.
	own, err := w.restoreForkPoint(id, given.ForkedFrom, conv.Messages, contents, seqs)
	if err != nil {
		return false, err
	}
	for i, m := range conv.Messages {
		if i < own {
			continue
		}
		from, to := compactArgs(m.Compaction)
		if _, err := w.tx.Exec(msgInsertSQL, id, seqs[i], m.Role, sealMsg(dk, contents[i], seqs[i]), w.or(m.CreatedAt), from, to, w.s.tenant); err != nil {
			return false, err
		}
		if err := w.s.indexSealedMessage(w.tx, dk, id, seqs[i], m.Role, w.or(m.CreatedAt), contents[i]); err != nil { // search_sealed.go
			return false, err
		}
	}
	if err := insertCostRecords(w.tx, id, 0, conv.CostRecords, rowcodec.ToMillis(w.now), w.s.tenant); err != nil {
		return false, err
	}
	for _, a := range rec.Artifacts {
		at := w.or(a.CreatedAt)
		up := at
		if !a.UpdatedAt.IsZero() {
			up = rowcodec.ToMillis(a.UpdatedAt)
		}
		if _, err := w.tx.Exec(artifactRestoreSQL, id, a.URI, a.ID, a.ToolName, sealedText(dk, a.Content, adArtifact, a.URI),
			a.OriginalBytes, a.ShownBytes, at, up, w.s.tenant); err != nil {
			return false, err
		}
	}
	tseq := positions(len(rec.Traces), func(i int) int64 { return rec.Traces[i].Seq })
	for i, ev := range rec.Traces {
		if _, err := w.tx.Exec(traceInsertSQL, id, tseq[i], ev.Kind, ev.Name, sealed(dk, traces[i], adTrace, seqAD(tseq[i])), w.or(ev.CreatedAt), w.s.tenant); err != nil {
			return false, err
		}
	}
	for i, r := range rec.Runs {
		norm, snap, events, err := store.NormalizeRun(fmt.Sprintf("runs[%d]", i), r, w.now)
		if err != nil {
			return false, err
		}
		s := norm.Snapshot
		if _, err := w.tx.Exec(runRestoreSQL, id, s.ID, s.Status, s.EventCount, sealed(dk, snap, adRun, s.ID),
			rowcodec.ToMillis(s.CreatedAt), rowcodec.ToMillis(s.UpdatedAt), w.s.tenant); err != nil {
			return false, err
		}
		for j, ev := range norm.Events {
			if _, err := w.tx.Exec(runEventInsertSQL, id, s.ID, ev.Seq, rowcodec.ToMillis(ev.Timestamp), sealRunEvent(dk, events[j], s.ID, ev.Seq), w.s.tenant); err != nil {
				return false, err
			}
		}
	}
	rseq := positions(len(rec.Reports), func(i int) int64 { return rec.Reports[i].Seq })
	for i, r := range rec.Reports {
		if _, err := w.tx.Exec(reportInsertSQL, id, rseq[i], r.Subject, r.Status, sealed(dk, reports[i], adReport, seqAD(rseq[i])), w.or(r.CreatedAt), w.s.tenant); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (w *recordWriter) PutRuntimeSession(rec store.RuntimeRecord) (bool, error) {
	s := rec.Session
	req := store.NewRuntimeSession{ID: s.ID, AgentAlias: s.AgentAlias, WorkspaceDir: s.WorkspaceDir, ChatMode: s.ChatMode, OwnerID: s.OwnerID}
	if s.ID == "" {
		return false, store.Invalid("id", "must not be empty")
	}
	if err := req.Validate(); err != nil {
		return false, err
	}
	if err := s.Overrides.Validate(); err != nil {
		return false, err
	}
	type upload = restoredUpload
	ups := make([]upload, len(rec.Uploads))
	for i, u := range rec.Uploads {
		if u.Upload.SessionID != "" && u.Upload.SessionID != s.ID {
			return false, store.Invalid(fmt.Sprintf("uploads[%d].session_id", i), "is not the session's id")
		}
		r := store.PutUploadRequest{SessionID: s.ID, RefID: u.Upload.RefID, Marker: u.Upload.Marker,
			WorkspacePath: u.Upload.WorkspacePath, Content: u.Content, SHA256: u.Upload.SHA256}
		if err := r.Validate(); err != nil {
			return false, err
		}
		sum, err := r.CheckContent(MaxUploadLimit)
		if err != nil {
			return false, err
		}
		if r.Content == nil {
			r.Content = []byte{}
		}
		ups[i] = upload{r, sum, w.or(u.Upload.CreatedAt)}
	}
	created := w.or(s.CreatedAt)
	lastActive := created
	if !s.LastActive.IsZero() {
		lastActive = rowcodec.ToMillis(s.LastActive)
	}
	// The last turn's generation, start and owner are kept (the owner of
	// an ended turn stays readable, as it does in the source); the turn is
	// not running: it belonged to the process that ran it.
	var started int64
	var owner string
	if s.Turn.Generation > 0 {
		started, owner = rowcodec.ToMillis(s.Turn.StartedAt), s.Turn.Owner
		if owner != "" {
			if err := store.ValidateID("turn.owner", owner); err != nil {
				return false, err
			}
		}
	}
	// A store with a keyring restores the session encrypted, under a data
	// key of its own (crypt_runtime.go), like one it creates.
	ctx := context.Background()
	dk, err := w.newKey(ctx)
	if err != nil {
		return false, err
	}
	put, err := w.putRuntime(rec, dk, ups, started, owner, created, lastActive)
	if err != nil || !put {
		w.s.discardKey(ctx, dk)
	}
	return put, err
}

// putRuntime writes a validated runtime record, sealed for dk (nil:
// plaintext).
func (w *recordWriter) putRuntime(rec store.RuntimeRecord, dk *keys.DataKey, ups []restoredUpload, started int64, owner string, created, lastActive int64) (bool, error) {
	s := rec.Session
	o := s.Overrides
	res, err := w.tx.Exec(rtRestoreSQL, s.ID, s.AgentAlias, sealed(dk, []byte(s.WorkspaceDir), adWorkspace), string(s.ChatMode),
		sql.NullString{String: s.OwnerID, Valid: s.OwnerID != ""},
		nullString(o.Model), nullString(o.Provider), nullFloat(o.Temperature),
		created, lastActive, int64(s.Turn.Generation), started, owner, w.s.tenant)
	if err != nil {
		return false, err
	}
	if ok, err := affected(res); !ok || err != nil {
		return false, err
	}
	if err := setRuntimeKey(w.tx, s.ID, dk); err != nil {
		return false, err
	}
	if s.Turn.Generation > 0 {
		if _, err := w.tx.Exec(`UPDATE runtime_counters SET last_turn_gen = `+w.s.d.Greatest+
			`(last_turn_gen, CAST(? AS BIGINT)) WHERE id = 1`, int64(s.Turn.Generation)); err != nil {
			return false, err
		}
	}
	for _, u := range ups {
		up := sealUpload(dk, u.req.RefID, u.req.Marker, u.req.WorkspacePath, u.sum, u.req.Content)
		size := int64(len(u.req.Content))
		if err := w.s.putBlob(w.tx, up); err != nil {
			return false, err
		}
		if _, err := w.tx.Exec(upRestoreSQL, s.ID, u.req.RefID, up.marker, up.path, up.blobKey, size, u.at, w.s.tenant); err != nil {
			return false, err
		}
		if dk != nil {
			if _, err := w.tx.Exec(upDigestSQL, up.digest, s.ID, u.req.RefID); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// restoredUpload is a validated upload of a runtime record.
type restoredUpload struct {
	req store.PutUploadRequest
	sum [32]byte
	at  int64
}

// validateState checks the values of one state scope, any number of keys.
func validateState(field string, m map[string]json.RawMessage) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := (store.ScopedState{Session: map[string]json.RawMessage{k: m[k]}}).Validate(field); err != nil {
			return err
		}
	}
	return nil
}

func (w *recordWriter) PutAppState(app string, state map[string]json.RawMessage) ([]string, error) {
	if err := store.ValidateID("app", app); err != nil {
		return nil, err
	}
	if err := validateState("app_state", state); err != nil {
		return nil, err
	}
	return w.putShared(state, func(k string, v json.RawMessage) (sql.Result, error) {
		return w.tx.Exec(stAppRestoreSQL, app, k, string(v), w.s.tenant)
	}, func(k string, dest *[]byte) error {
		return w.tx.Scan(stAppValueSQL, []any{app, k, w.s.tenant}, dest)
	})
}

func (w *recordWriter) PutUserState(app, user string, state map[string]json.RawMessage) ([]string, error) {
	if err := (store.SessionKey{App: app, User: user, Session: "-"}).Validate(); err != nil {
		return nil, err
	}
	if err := validateState("user_state", state); err != nil {
		return nil, err
	}
	return w.putShared(state, func(k string, v json.RawMessage) (sql.Result, error) {
		return w.tx.Exec(stUserRestoreSQL, app, user, k, string(v), w.s.tenant)
	}, func(k string, dest *[]byte) error {
		return w.tx.Scan(stUserValueSQL, []any{app, user, k, w.s.tenant}, dest)
	})
}

// putShared inserts the keys of state that are not stored and returns
// those stored with another value.
func (w *recordWriter) putShared(state map[string]json.RawMessage,
	insert func(k string, v json.RawMessage) (sql.Result, error), stored func(k string, dest *[]byte) error) ([]string, error) {
	var differing []string
	for _, k := range slices.Sorted(maps.Keys(state)) {
		res, err := insert(k, state[k])
		if err != nil {
			return nil, err
		}
		if ok, err := affected(res); err != nil {
			return nil, err
		} else if ok {
			continue
		}
		var cur []byte
		if err := stored(k, &cur); err != nil {
			return nil, err
		}
		if !bytes.Equal(cur, state[k]) {
			differing = append(differing, k)
		}
	}
	return differing, nil
}

func (w *recordWriter) PutAgentSession(s store.AgentSession) (bool, error) {
	key := s.Key
	if err := key.Validate(); err != nil {
		return false, err
	}
	if s.Version < 1 {
		return false, store.Invalid("version", "must be at least 1")
	}
	if s.EventCount != int64(len(s.Events)) {
		return false, store.Invalid("event_count", fmt.Sprintf("is %d, but the session has %d events", s.EventCount, len(s.Events)))
	}
	ids := make(map[string]bool, len(s.Events))
	for i, ev := range s.Events {
		f := fmt.Sprintf("events[%d]", i)
		switch {
		case ev.Seq != int64(i+1):
			return false, store.Invalid(f+".seq", fmt.Sprintf("is %d, want %d: positions run from 1 without gaps", ev.Seq, i+1))
		case ev.ID == "":
			return false, store.Invalid(f+".id", "must not be empty")
		case ids[ev.ID]:
			return false, store.Invalid(f+".id", "appears twice")
		case ev.Timestamp.IsZero():
			return false, store.Invalid(f+".timestamp", "must be set")
		}
		ids[ev.ID] = true
		ev.Seq, ev.Compaction = 0, nil // a compaction record's range is checked below
		if err := (store.AppendEventRequest{Key: key, Event: ev}).Validate(); err != nil {
			return false, err
		}
	}
	if err := validateState("state.session", s.State.Session); err != nil {
		return false, err
	}
	created := w.or(s.CreatedAt)
	updated := w.or(s.UpdatedAt)
	parent, at, initial, err := w.forkParent(s)
	if err != nil {
		return false, err
	}
	// A store with a keyring stores what it restores encrypted, like what
	// it creates: the session gets a data key of its own (an export's
	// sealed content was opened with the exporting session's key; it is
	// never written back in plaintext to an encrypting store).
	dk, err := w.newKey(w.ctx) // crypt.go; nil without a keyring
	if err != nil {
		return false, err
	}
	var pk int64
	if parent != 0 {
		err = w.tx.Get(&pk, asRestoreForkSQL, key.App, key.User, key.Session, s.Version, s.EventCount, created, updated, parent, at, sealed(dk, []byte(initial), adInitial), keyID(dk), w.s.tenant)
	} else {
		err = w.tx.Get(&pk, asRestoreSQL, key.App, key.User, key.Session, s.Version, s.EventCount, created, updated, sealInitial(dk, nil), keyID(dk), w.s.tenant)
	}
	if err != nil {
		w.s.discardKey(w.ctx, dk)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil // exists
		}
		return false, err
	}
	for _, ev := range s.Events {
		if ev.Seq <= at {
			continue // the parent's, read through the lineage
		}
		var from, to int64
		if c := ev.Compaction; c != nil {
			if c.From < 1 || c.To < c.From || c.To >= ev.Seq {
				return false, store.Invalid("events.compaction", "must cover positions before the record")
			}
			from, to = c.From, c.To
		}
		us, ns := splitNanos(ev.Timestamp)
		if _, err := w.tx.Exec(evInsertSQL, pk, ev.Seq, ev.ID, ev.InvocationID, us, ns, sealed(dk, ev.Data, adEvent, seqAD(ev.Seq), ev.ID), from, to, w.s.tenant); err != nil {
			return false, err
		}
		if err := w.s.indexSealedEvent(w.tx, dk, pk, ev.Seq, us, ev.Data); err != nil { // search_sealed.go
			return false, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.State.Session)) {
		if _, err := w.tx.Exec(stSessionRestoreSQL, pk, k, sealed(dk, s.State.Session[k], adState, k), w.s.tenant); err != nil {
			return false, err
		}
	}
	return true, nil
}
