package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// A store is copied into another, facet by facet, from one snapshot of
// the source: the same calls move a SQLite store to PostgreSQL (open the
// destination with pgstore.Open).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "archive-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	src, err := sqlstore.Open(ctx, filepath.Join(dir, "src.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Governance().Create(ctx, store.CreateRequest{ID: "task-7", AgentID: "agent-42",
		AuthorizedTools: []string{"read_file"}, CallBudget: 10, TimeLimit: time.Hour}); err != nil {
		log.Fatal(err)
	}
	if _, err := src.Conversations().Save(ctx, store.NewConversation("task-7")); err != nil {
		log.Fatal(err)
	}

	var doc bytes.Buffer
	written, err := archive.Export(ctx, src, &doc, archive.ExportOptions{})
	if err != nil {
		log.Fatal(err)
	}

	dst, err := sqlstore.Open(ctx, filepath.Join(dir, "dst.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()
	res, err := archive.Import(ctx, dst, &doc, archive.ImportOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exported %d governed, %d conversations, %d audit chains\n", written.Governed, written.Conversations, written.Audit)
	fmt.Printf("imported %d governed, %d conversations, %d audit chains\n", res.Governed, res.Conversations, res.Audit)
	s, err := dst.Governance().Get(ctx, "task-7")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.AgentID, s.CallBudget)
	// Output:
	// exported 1 governed, 1 conversations, 1 audit chains
	// imported 1 governed, 1 conversations, 1 audit chains
	// agent-42 10
}
