package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

// BenchmarkOpenNew measures the creation of a new store: Open on a path
// that does not exist, which builds the whole schema (every migration)
// and closes it. Tests and tools that make many stores pay it each time;
// it is also a direction check for the cost of applying migrations:
//
//	go test -run '^$' -bench '^BenchmarkOpenNew$' -benchtime 20x ./sqlstore
func BenchmarkOpenNew(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		st, err := sqlstore.Open(ctx, filepath.Join(dir, fmt.Sprintf("new-%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
