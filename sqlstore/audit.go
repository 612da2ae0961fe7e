package sqlstore

import (
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// auditChainFunc is the SQL function that computes an audit event's hash
// on SQLite (rowcodec.AuditHash), so that an append takes the next
// sequence number and hash in one upsert of the chain's head.
const auditChainFunc = "sessionstore_audit_chain"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(auditChainFunc, 4, auditChain)
}

// auditChainSQL is the dialect's AuditChain: a call of auditChainFunc.
func auditChainSQL(prev, seq, agent, payload string) string {
	return auditChainFunc + "(" + prev + ", " + seq + ", " + agent + ", " + payload + ")"
}

// auditChain is sessionstore_audit_chain(prev_hash, seq, agent_id,
// payload).
func auditChain(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	prev, ok1 := args[0].(string)
	seq, ok2 := args[1].(int64)
	agent, ok3 := args[2].(string)
	var payload []byte
	switch p := args[3].(type) {
	case []byte:
		payload = p
	case string:
		payload = []byte(p)
	case nil:
	default:
		ok3 = false
	}
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("%s: arguments of the wrong types", auditChainFunc)
	}
	h, ok := rowcodec.AuditHash(prev, seq, agent, payload)
	if !ok {
		return nil, fmt.Errorf("%s: the previous hash is not 64 hex digits", auditChainFunc)
	}
	return h, nil
}

// Audit returns the audit trail (see store.Audit).
func (s *Store) Audit() store.Audit { return s.core.Audit() }

// Spend returns the spend facet (see store.Spend).
func (s *Store) Spend() store.Spend { return s.core.Spend() }
