package sqlcore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// Encryption at rest (see store.KeyRing and migration 00016). A session
// row's data_key names its data key in the keyring ('' = plaintext); every
// row of that session's content columns is sealed with it, with the row's
// identity as associated data: the table, the data key's id (one per
// session row lineage: a rewind's superseded run keeps its session's key,
// a fork has its own), and the position or state key. A row sealed for
// one place does not open in another.

// Associated-data tags of the sealed columns.
const (
	adEvent   = "agent_events.data"
	adState   = "agent_session_state.value" // a head of agent_state_log since migration 40; the tag stays, so stored values open
	adLog     = "agent_state_log.value"
	adInitial = "agent_sessions.initial_state"
)

const (
	keyOfPKSQL     = `SELECT data_key FROM agent_sessions WHERE pk = ?`
	keySetPKSQL    = `UPDATE agent_sessions SET data_key = ? WHERE pk = ?`
	shredQueueSQL  = `SELECT key_id FROM key_shred_queue ORDER BY key_id LIMIT 256`
	shredUsedSQL   = `SELECT (SELECT count(*) FROM agent_sessions WHERE data_key = ?1) + (SELECT count(*) FROM conversations WHERE data_key = ?1) + (SELECT count(*) FROM conversation_retired WHERE data_key = ?1) + (SELECT count(*) FROM runtime_sessions WHERE data_key = ?1)`
	shredDequeuSQL = `DELETE FROM key_shred_queue WHERE key_id = ?`
)

// maxDataKeys bounds the sealers a Store keeps (the keyring keeps the
// unwrapped keys themselves).
const maxDataKeys = 4096

// dataKeys caches the sealers of data keys by id.
type dataKeys struct {
	mu sync.Mutex
	m  map[string]*keys.DataKey
}

// Encrypted reports whether the store creates encrypted sessions.
func (s *Store) Encrypted() bool { return s.cfg.Keys != nil }

// dataKey returns the sealer of the data key named id; nil for "" (a
// plaintext session). A store without a keyring cannot open it:
// ErrKeyUnavailable.
func (s *Store) dataKey(ctx context.Context, id string) (*keys.DataKey, error) {
	if id == "" {
		return nil, nil
	}
	if s.cfg.Keys == nil {
		return nil, &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyUnavailable}
	}
	s.dks.mu.Lock()
	dk := s.dks.m[id]
	s.dks.mu.Unlock()
	if dk != nil {
		return dk, nil
	}
	raw, err := s.cfg.Keys.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	if dk, err = keys.NewDataKey(id, raw); err != nil {
		return nil, err
	}
	s.dks.mu.Lock()
	if s.dks.m == nil || len(s.dks.m) >= maxDataKeys {
		s.dks.m = make(map[string]*keys.DataKey)
	}
	s.dks.m[id] = dk
	s.dks.mu.Unlock()
	return dk, nil
}

// newDataKey creates the data key of a new session when the store
// encrypts (nil, "" otherwise). The key is in the keyring before the row
// that names it commits; if the row never does, the unnamed key file is
// shredded by the caller (discardKey).
func (s *Store) newDataKey(ctx context.Context) (*keys.DataKey, error) {
	if s.cfg.Keys == nil {
		return nil, nil
	}
	id, raw, err := s.cfg.Keys.NewKey(ctx)
	if err != nil {
		return nil, err
	}
	return keys.NewDataKey(id, raw)
}

// discardKey shreds a key created for a session that was not created.
func (s *Store) discardKey(ctx context.Context, dk *keys.DataKey) {
	if dk == nil {
		return
	}
	if err := s.cfg.Keys.Shred(context.WithoutCancel(ctx), dk.ID()); err != nil {
		s.log.Warn("sessionstore: shredding an unused data key", "key_id", dk.ID(), "err", err)
	}
}

// Every read of an agent_sessions row on the paths that seal or open
// content selects its data_key with the row (asGetSQL, asBumpSQL, the
// lineage walk's statements): the key costs no statement of its own.
// keyOfPK is for the paths that hold an event but not its session's row
// (search results, a reindex).
func (s *Store) keyOfPK(r Tx, pk int64) (*keys.DataKey, error) {
	var id string
	if err := r.Scan(keyOfPKSQL, []any{pk}, &id); err != nil {
		return nil, err
	}
	return s.dataKey(context.Background(), id)
}

func keyID(dk *keys.DataKey) string {
	if dk == nil {
		return ""
	}
	return dk.ID()
}

// sealed returns v as stored for dk: sealed with the identity parts, or
// as it is when dk is nil.
func sealed(dk *keys.DataKey, v []byte, ad ...string) string {
	if dk == nil {
		return string(v)
	}
	return dk.Seal(v, keys.AD(append([]string{keyID(dk)}, ad...)...))
}

// opened returns the plaintext of a stored value: opened with dk, or as
// it is when dk is nil and the value is not sealed. Ciphertext in a
// plaintext session, plaintext in an encrypted one, and a value sealed
// elsewhere are ErrKeyMismatch.
func opened(dk *keys.DataKey, v []byte, ad ...string) ([]byte, error) {
	if dk == nil {
		if keys.IsSealed(v) {
			return nil, &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
		}
		return v, nil
	}
	return dk.Open(v, keys.AD(append([]string{keyID(dk)}, ad...)...))
}

func seqAD(seq int64) string { return strconv.FormatInt(seq, 10) }

// sealDelta returns delta with its session-scope values sealed for dk
// (app and user scopes are shared by sessions and stay plaintext).
func sealDelta(dk *keys.DataKey, delta store.ScopedState) store.ScopedState {
	if dk == nil || len(delta.Session) == 0 {
		return delta
	}
	out := delta
	out.Session = make(map[string]json.RawMessage, len(delta.Session))
	for k, v := range delta.Session {
		out.Session[k] = json.RawMessage(sealed(dk, v, adState, k))
	}
	return out
}

// openSessionState opens the session-scope values read for dk, in place.
func openSessionState(dk *keys.DataKey, m map[string]json.RawMessage) error {
	for k, v := range m {
		p, err := opened(dk, v, adState, k)
		if err != nil {
			return err
		}
		m[k] = p
	}
	return nil
}

// openEvents opens the data of events read from the row whose sealer is
// dk, in place. The associated data of every event is built in one
// buffer (the same bytes as keys.AD(key id, adEvent, seq, event id)).
func openEvents(dk *keys.DataKey, evs []store.AgentEvent) error {
	if dk == nil {
		for i := range evs {
			if keys.IsSealed(evs[i].Data) {
				return &store.KeyError{Op: "open", Kind: store.ErrKeyMismatch}
			}
		}
		return nil
	}
	id := dk.ID()
	var ad []byte
	var num [20]byte
	for i := range evs {
		ad = appendAD(ad[:0], id)
		ad = appendAD(ad, adEvent)
		ad = appendADBytes(ad, strconv.AppendInt(num[:0], evs[i].Seq, 10))
		ad = appendAD(ad, evs[i].ID)
		// The scanned bytes are this read's own (the driver, or Scan into
		// a []byte, allocated them): opened where they lie.
		p, err := dk.OpenInPlace(evs[i].Data, ad)
		if err != nil {
			return err
		}
		evs[i].Data = p
	}
	return nil
}

// appendAD appends one length-prefixed part of associated data (the
// encoding of keys.AD).
func appendAD(b []byte, part string) []byte {
	b = binary.AppendUvarint(b, uint64(len(part)))
	return append(b, part...)
}

func appendADBytes(b, part []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(part)))
	return append(b, part...)
}

// sealInitial is a row's stored initial_state.
func sealInitial(dk *keys.DataKey, m map[string]json.RawMessage) string {
	return sealed(dk, []byte(encodeSessionState(m)), adInitial)
}

// openInitial decodes a row's stored initial_state.
func openInitial(dk *keys.DataKey, s string) (map[string]json.RawMessage, error) {
	p, err := opened(dk, []byte(s), adInitial)
	if err != nil {
		return nil, err
	}
	return decodeSessionState(string(p))
}

// ShredPending shreds the data keys of deleted session rows (queued by
// migration 00016's triggers) that no row names any more, and returns how
// many it shredded. Deletes run it after they commit; it is idempotent and
// safe to run from several processes.
func (s *Store) ShredPending(ctx context.Context) (int, error) {
	var ids []string
	if err := s.db.Select(ctx, &ids, shredQueueSQL); err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		var used int64
		if err := s.db.Scan(ctx, shredUsedSQL, []any{id}, &used); err != nil {
			return n, err
		}
		if used == 0 {
			if s.cfg.Keys == nil {
				// Nothing to shred with: keep it queued for a store that
				// has the keyring.
				continue
			}
			if err := s.cfg.Keys.Shred(ctx, id); err != nil {
				return n, err
			}
			n++
		}
		// A key still named (by a fork's retired parent) is queued again
		// when that row goes.
		err := s.write(ctx, func(tx Tx) error {
			_, err := tx.Exec(shredDequeuSQL, id)
			return err
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// shredAfter runs ShredPending after a delete committed; a failure is
// logged (the queue keeps the key for the next drain), not returned: the
// delete itself succeeded.
func (s *Store) shredAfter(ctx context.Context) {
	if _, err := s.ShredPending(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("sessionstore: shredding deleted sessions' data keys", "err", err)
	}
}

// setKeyOfPK names dk as the data key of the agent_sessions row pk (no-op
// for a plaintext row).
func setKeyOfPK(tx Tx, pk int64, dk *keys.DataKey) error {
	if dk == nil {
		return nil
	}
	_, err := tx.Exec(keySetPKSQL, dk.ID(), pk)
	return err
}

// readStateOpen is readState with the session scope opened with the
// session row's data key (keyID, read with the row).
func (s *Store) readStateOpen(r Tx, key store.SessionKey, pk int64, keyID string) (store.ScopedState, error) {
	st, err := readState(r, s.tenant, key, pk)
	if err != nil || pk == 0 || len(st.Session) == 0 {
		return st, err
	}
	dk, err := s.dataKey(context.Background(), keyID)
	if err != nil {
		return store.ScopedState{}, err
	}
	if err := openSessionState(dk, st.Session); err != nil {
		return store.ScopedState{}, err
	}
	return st, nil
}
