package archive

// Encrypted agent sessions in an export (issue 29). A session the store
// keeps encrypted (store.AgentSession.DataKeyID) is written sealed: its
// event data and session-state values are sealed with the session's own
// data key from the keyring (ExportOptions.Keys), bound to the session's
// key and the item's position, and the session carries the key's id
// (data_key). The document holds no plaintext of it, needs the keyring
// and its KEKs to be imported (ImportOptions.Keys), and becomes
// unreadable when the session's key is shredded, as every other copy of
// its rows does. An export without the keyring refuses such a session
// (store.ErrKeyUnavailable) rather than write it in plaintext.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const adArchive = "archive agent session"

func (s *AgentSession) eventAD(ev AgentEvent) []byte {
	return sskeys.AD(adArchive, s.DataKey, s.App, s.User, s.Session, "event", strconv.FormatInt(ev.Seq, 10), ev.ID)
}

func (s *AgentSession) stateAD(k string) []byte {
	return sskeys.AD(adArchive, s.DataKey, s.App, s.User, s.Session, "state", k)
}

func sessionKey(ctx context.Context, ring store.KeyRing, id string) (*sskeys.DataKey, error) {
	if ring == nil {
		return nil, &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyUnavailable}
	}
	raw, err := ring.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	return sskeys.NewDataKey(id, raw)
}

// shredChecker is a keyring that tells a key it shredded from one it
// never held (keys.Ring).
type shredChecker interface {
	ShreddedHere(ctx context.Context, id string) (bool, error)
}

// openKey is sessionKey for an import, which opens what another store
// may have sealed: a key missing from ring that ring did not shred is
// store.ErrKeyAbsent (not in this keyring), not ErrKeyShredded.
func openKey(ctx context.Context, ring store.KeyRing, id string) (*sskeys.DataKey, error) {
	dk, err := sessionKey(ctx, ring, id)
	var ke *store.KeyError
	if err == nil || !errors.Is(err, store.ErrKeyShredded) || !errors.As(err, &ke) {
		return dk, err
	}
	sc, ok := ring.(shredChecker)
	if !ok {
		return nil, err
	}
	if here, cerr := sc.ShreddedHere(ctx, id); cerr != nil || here {
		return nil, err
	}
	return nil, &store.KeyError{KeyID: id, KEKVersion: ke.KEKVersion, Ring: ke.Ring, Op: ke.Op, Kind: store.ErrKeyAbsent}
}

// seal seals s's content with its data key keyID.
func (s *AgentSession) seal(ctx context.Context, ring store.KeyRing, keyID string) error {
	dk, err := sessionKey(ctx, ring, keyID)
	if err != nil {
		return err
	}
	s.DataKey = keyID
	for i := range s.Events {
		s.Events[i].Data = dk.Seal([]byte(s.Events[i].Data), s.eventAD(s.Events[i]))
	}
	for k, v := range s.State {
		s.State[k] = dk.Seal([]byte(v), s.stateAD(k))
	}
	return nil
}

// open opens a sealed session's content in place (no-op for a plaintext
// one).
func (s *AgentSession) open(ctx context.Context, ring store.KeyRing) error {
	if s.DataKey == "" {
		return nil
	}
	dk, err := openKey(ctx, ring, s.DataKey)
	if err != nil {
		return err
	}
	for i := range s.Events {
		p, err := dk.Open([]byte(s.Events[i].Data), s.eventAD(s.Events[i]))
		if err != nil {
			return err
		}
		s.Events[i].Data = string(p)
	}
	for k, v := range s.State {
		p, err := dk.Open([]byte(v), s.stateAD(k))
		if err != nil {
			return err
		}
		s.State[k] = string(json.RawMessage(p))
	}
	s.DataKey = ""
	return nil
}
