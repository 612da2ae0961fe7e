package sqlstore_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

// The audit chain records decisions in the order they commit: when one
// request of a group-committed batch fails and is retried, its event comes
// after the others', so the chain of the retried batch differs from the
// reference in its sequence numbers and hashes, not in its events. The
// batch sweep therefore compares the audit tables as sets of events (and
// the heads' lengths), and checks that every chain verifies.

var auditChainFields = regexp.MustCompile(` ?(seq|prev_hash|hash)=[^ ]*`)

// batchState is dumpState with the audit tables' chain fields removed.
func batchState(t testing.TB, path string) string {
	t.Helper()
	lines := strings.Split(dumpState(t, path), "\n")
	var out []string
	var section []string
	table := ""
	flush := func() {
		slices.Sort(section)
		out = append(out, section...)
		section = nil
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "== ") {
			flush()
			table = strings.TrimPrefix(l, "== ")
			out = append(out, l)
			continue
		}
		if table == "audit_events" || table == "audit_heads" {
			keep := l
			if table == "audit_events" {
				keep = auditChainFields.ReplaceAllString(l, "")
			} else {
				keep = regexp.MustCompile(` ?(prev_hash|hash)=[^ ]*`).ReplaceAllString(l, "")
			}
			section = append(section, keep)
			continue
		}
		section = append(section, l)
	}
	flush()
	return strings.Join(out, "\n")
}

// verifyAuditFile opens the database and fails unless every chain
// verifies.
func verifyAuditFile(t testing.TB, path string) {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := st.Audit().Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("audit of %s: %+v, %v", path, rep.Problems, err)
	}
}
