package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
)

// TestIsUniqueViolation: a write's unique-key check (made after every
// insert of a create and an append) costs no allocation when the insert
// succeeded, and still recognizes a duplicate key.
func TestIsUniqueViolation(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { isUniqueViolation(nil) }); n != 0 {
		t.Errorf("isUniqueViolation(nil) allocates %.0f times, want 0", n)
	}
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn := st.w.conn
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE u (k TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO u VALUES ('a')"); isUniqueViolation(err) || err != nil {
		t.Fatalf("first insert: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO u VALUES ('a')"); !isUniqueViolation(err) {
		t.Fatalf("a duplicate key is not a unique violation: %v", err)
	}
}
