package sqlstore

import (
	"database/sql/driver"
	"sync"

	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/internal/searchtext"
	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// The search fold computes the document of an agent event in Go
// (searchtext.EventDoc) rather than with SQLite's JSON functions, which
// read the event's JSON several times per event (a third of the fold's
// own statement, measured by BenchmarkFoldCPU's profile); where the Go
// code is not sure to compute what the SQL computes, it returns NULL, and
// the fold's SQL decides (sqlcore.EventRoleSQL, sqlcore.EventTextSQL).
func init() {
	sqlite.MustRegisterDeterministicScalarFunction(sqlcore.EventRoleFunc, 1, eventDocRole)
	sqlite.MustRegisterDeterministicScalarFunction(sqlcore.EventTextFunc, 1, eventDocText)
}

// lastEventDoc is the last event document computed: the fold asks for
// the role and then the text of the same event.
var lastEventDoc struct {
	sync.Mutex
	data, role, text string
	ok               bool
}

// eventDoc returns searchtext.EventDoc(data), from lastEventDoc when it
// holds data's.
func eventDoc(data string) (role, text string, ok bool) {
	last := &lastEventDoc
	last.Lock()
	defer last.Unlock()
	if last.data != data || data == "" {
		last.data = data
		last.role, last.text, last.ok = searchtext.EventDoc(data)
	}
	return last.role, last.text, last.ok
}

// eventDocRole is sqlcore.EventRoleFunc.
func eventDocRole(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	data, ok := args[0].(string)
	if !ok {
		return nil, nil
	}
	role, _, ok := eventDoc(data)
	if !ok {
		return nil, nil
	}
	return role, nil
}

// eventDocText is sqlcore.EventTextFunc.
func eventDocText(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	data, ok := args[0].(string)
	if !ok {
		return nil, nil
	}
	_, text, ok := eventDoc(data)
	if !ok {
		return nil, nil
	}
	return text, nil
}
