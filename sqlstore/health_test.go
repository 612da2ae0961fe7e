package sqlstore_test

// HealthCheck after the database became read-only (issue 24): a file made
// immutable under an open store keeps taking writes through the store's
// open descriptors, but the next Open refuses it, so HealthCheck must say
// ErrReadOnly, and it must not change the file doing so.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func TestHealthCheckAfterBecomingReadOnly(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name   string
		target func(dir, path string) string
		want   error // nil: healthy, as the next Open would find it
	}{
		{"file", func(_, path string) string { return path }, store.ErrReadOnly},
		{"wal", func(_, path string) string { return path + "-wal" }, store.ErrReadOnly},
		// The -wal, -shm and -writer.lock files are there and writable:
		// Open accepts the database, and so does HealthCheck.
		{"dir-with-its-files", func(dir, _ string) string { return dir }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "db")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "s.db")
			st, err := sqlstore.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Governance().Create(ctx, longSession("keep", 1)); err != nil {
				t.Fatal(err)
			}
			if err := st.HealthCheck(ctx); err != nil {
				t.Fatalf("HealthCheck of a writable store: %v", err)
			}
			target := c.target(dir, path)
			chattr(t, "+i", target)
			t.Cleanup(func() { exec.Command("chattr", "-i", target).Run() })
			before := dirFiles(t, dir)

			err = st.HealthCheck(ctx)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("HealthCheck: %v, want nil", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("HealthCheck: %v, want %v", err, c.want)
			}
			after := dirFiles(t, dir)
			// The -shm file is shared memory readers mark; the database
			// and its log hold what is durable.
			for _, name := range []string{"s.db", "s.db-wal"} {
				if after[name] != before[name] {
					t.Errorf("HealthCheck changed %s", name)
				}
			}
			// What the next Open meets is what HealthCheck said.
			if c.want != nil {
				if err := sqlstore.CheckWritable(path); !errors.Is(err, c.want) {
					t.Errorf("CheckWritable: %v, want %v", err, c.want)
				}
			}
		})
	}
}
