package sqlstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/agentstore/sessionstore/internal/walpages"
)

// walPagesByObject names the schema object (table or index, from SQLite's
// dbstat table) of each frame in the WAL at path+"-wal", read through raw,
// and returns a line per object with its frames, most first: what a page
// budget's pages are (see package walpages). It returns "" when the log
// cannot be read.
func walPagesByObject(t *testing.T, path string, raw *sql.DB) string {
	t.Helper()
	by, err := walpages.Objects(context.Background(), raw, path+"-wal")
	if err != nil {
		t.Logf("pages by object: %v", err)
		return ""
	}
	return walpages.Format(by, "%d")
}
