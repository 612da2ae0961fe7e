package sqlstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// A conversation's history as a tree: fork it to retry from a message,
// rewind it (the later messages stay readable as a superseded run), and
// append a compaction record that the summary read returns first.
func Example_conversationForkRewindCompact() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	conv := st.Conversations()

	c := store.NewConversation("c1")
	for _, s := range []string{"hello", "hi, how can I help?", "list the files", "README.md go.mod"} {
		c.Messages = append(c.Messages, store.UserMessage(s))
	}
	if _, err := conv.Save(ctx, c); err != nil {
		log.Fatal(err)
	}
	// The fork reads messages 0..1 from c1: nothing is copied.
	f, err := conv.Fork(ctx, store.ConversationForkRequest{ID: "c1", At: 1, NewID: "c1-retry"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fork:", f.ID, f.MessageCount, "messages")
	if _, err := conv.AppendMessages(ctx, "c1-retry", store.UserMessage("summarise the repository")); err != nil {
		log.Fatal(err)
	}
	// Rewind c1 to message 1: messages 2 and 3 become a superseded run.
	if _, err := conv.Rewind(ctx, store.ConversationRewindRequest{ID: "c1", To: 1}); err != nil {
		log.Fatal(err)
	}
	runs, err := conv.Superseded(ctx, "c1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("superseded:", len(runs[0].Messages), "messages from", runs[0].Messages[0].Seq)
	// A summary of 0..1 on the fork, and the read that starts from it.
	if _, err := conv.Compact(ctx, store.ConversationCompactRequest{ID: "c1-retry",
		Range: store.CompactionRange{From: 0, To: 1}, Summary: store.AssistantMessage("greetings exchanged")}); err != nil {
		log.Fatal(err)
	}
	tail, err := conv.SummaryTail(ctx, "c1-retry", 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("summary at %d covers %d-%d, then %d message(s) from %d\n", tail.Summary.Seq,
		tail.Summary.Compaction.From, tail.Summary.Compaction.To, len(tail.Messages), tail.Messages[0].Seq)
	// Output:
	// fork: c1-retry 2 messages
	// superseded: 2 messages from 2
	// summary at 3 covers 0-1, then 1 message(s) from 2
}
