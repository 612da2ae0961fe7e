package rowcodec

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// The hash chain of the audit trail. An event's hash is
//
//	SHA-256( prev || be64(seq) || agent_id || "\n" || payload )
//	payload = be64(at) || kind "\n" outcome "\n" session_id "\n" request_id "\n" detail
//
// where at is the event's time in UTC unix microseconds (in milliseconds
// for the events written before migration 13, all in agent chains), prev
// is the 32 bytes of the previous event's hash (all zeros before a chain's
// first event), be64 is an int64 in 8 big-endian bytes (two's
// complement, PostgreSQL's int8send), strings are their UTF-8 bytes, and
// detail is the stored JSON text exactly. Ids, kinds and outcomes never
// contain a newline (ids have no control characters), and detail comes
// last, so the encoding is unambiguous. Hashes are stored as lower-case
// hex. The formula is stored data: never change it.

// AuditZeroHash is the previous hash of a chain's first event.
var AuditZeroHash = strings.Repeat("0", 64)

// AuditPayload encodes the fields of an event that its hash covers besides
// the previous hash, the sequence number and the agent.
func AuditPayload(at int64, kind, outcome, sessionID, requestID, detail string) []byte {
	b := make([]byte, 8, 8+len(kind)+len(outcome)+len(sessionID)+len(requestID)+len(detail)+4)
	binary.BigEndian.PutUint64(b, uint64(at))
	for _, s := range []string{kind, outcome, sessionID, requestID} {
		b = append(b, s...)
		b = append(b, '\n')
	}
	return append(b, detail...)
}

// AuditHash returns the hash of an event from its previous hash (hex),
// sequence number, agent and payload. ok is false when prev is not 64
// hex digits.
func AuditHash(prev string, seq int64, agentID string, payload []byte) (hash string, ok bool) {
	var p [32]byte
	if len(prev) != 64 {
		return "", false
	}
	if _, err := hex.Decode(p[:], []byte(prev)); err != nil {
		return "", false
	}
	h := sha256.New()
	h.Write(p[:])
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], uint64(seq))
	h.Write(s[:])
	h.Write([]byte(agentID))
	h.Write([]byte{'\n'})
	h.Write(payload)
	return hex.EncodeToString(h.Sum(nil)), true
}

// AuditDigest folds chain heads, given in (agent, chain) order, into one
// hex SHA-256: for each head, agent_id "\n" be64(seq) hash "\n" for an
// agent's own chain, and agent_id "\x1f" chain "\n" be64(seq) hash "\n"
// for a session chain (ids hold no control characters). A trail with
// agent chains only has the digest it had before session chains.
func AuditDigest(heads func(yield func(agentID, chain string, seq int64, hash string) bool)) string {
	h := sha256.New()
	var s [8]byte
	heads(func(agentID, chain string, seq int64, hash string) bool {
		h.Write([]byte(agentID))
		if chain != "" {
			h.Write([]byte{0x1f})
			h.Write([]byte(chain))
		}
		h.Write([]byte{'\n'})
		binary.BigEndian.PutUint64(s[:], uint64(seq))
		h.Write(s[:])
		h.Write([]byte(hash))
		h.Write([]byte{'\n'})
		return true
	})
	return hex.EncodeToString(h.Sum(nil))
}
