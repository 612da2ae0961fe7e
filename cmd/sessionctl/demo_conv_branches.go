package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// demoConversationBranches forks the demo conversation after its tool
// call (message 1): the fork reads messages 0 and 1 from it and goes on
// with its own answer; a compaction record over 0..1 follows, and the
// summary read returns it and the answer.
func demoConversationBranches(ctx context.Context, out io.Writer, st cliStore, id string) error {
	conv := st.Conversations()
	retry := id + "-retry"
	if _, err := conv.Fork(ctx, store.ConversationForkRequest{ID: id, At: 1, NewID: retry}); err != nil {
		return fmt.Errorf("fork conversation: %w", err)
	}
	if _, err := conv.AppendMessages(ctx, retry, store.AssistantMessage("Without listing: a session store.")); err != nil {
		return fmt.Errorf("append to the fork: %w", err)
	}
	sum, err := conv.Compact(ctx, store.ConversationCompactRequest{ID: retry, Range: store.CompactionRange{From: 0, To: 1},
		Summary: store.AssistantMessage("Asked for a one-sentence summary; a tool call was started.")})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	tail, err := conv.SummaryTail(ctx, retry, 0)
	if err != nil {
		return fmt.Errorf("summary read: %w", err)
	}
	read := []string{fmt.Sprintf("#%d (the record)", tail.Summary.Seq)}
	for _, m := range tail.Messages {
		read = append(read, fmt.Sprintf("#%d", m.Seq))
	}
	fmt.Fprintf(out, "\nconversation %s\n  forked %s at message 1 (no messages copied), then its own answer at #2\n", retry, id)
	fmt.Fprintf(out, "  compaction record at message %d summarises messages 0-1 (the originals stay); a summary read returns %s\n",
		sum.FirstSeq, strings.Join(read, ", "))
	nodes, err := conv.History(ctx, retry)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	fmt.Fprintf(out, "  the tree (sessionctl history %s):\n", retry)
	depths := treeDepths(nodes, convNodeIDs)
	for i, n := range nodes {
		fmt.Fprintf(out, "    %s%s: %d messages, %s\n", strings.Repeat("  ", depths[i]), n.ID, n.Messages, n.Status)
	}
	return nil
}
