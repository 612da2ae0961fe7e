package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchConversationEncryption measures the cost of encrypting
// conversations (issue 29's goals: a message append <= 1.3x plain, a read
// of 1,000 messages <= 1.5x): a plain and an encrypted store side by
// side, the two calls alternating in every iteration (which goes first
// flips each time), so that the ratio is not the machine's load changing
// between two runs. It reports ns/op of each side and the ratio.
func BenchConversationEncryption(b *testing.B, h Harness, o BenchOptions) {
	if h.OpenWith == nil {
		b.Skip("the harness cannot open a store with a keyring")
	}
	ctx := context.Background()
	ring, open := benchEncryptionStores(b, h, o)
	sides := []store.Conversations{open(nil).Conversations(), open(ring).Conversations()}
	text := benchReplyText()
	msg := store.AssistantMessage(text) // ~600 bytes
	b.Run("Append", func(b *testing.B) {
		for _, cs := range sides {
			if _, err := cs.Save(ctx, store.NewConversation("append")); err != nil {
				b.Fatal(err)
			}
		}
		benchAlternate(b, func(side int) error {
			_, err := sides[side].AppendMessages(ctx, "append", msg)
			return err
		})
	})
	b.Run("Read1000Messages", func(b *testing.B) {
		c := store.NewConversation("read")
		for range 1000 {
			c.Messages = append(c.Messages, msg)
		}
		for _, cs := range sides {
			if _, err := cs.Save(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		benchAlternate(b, func(side int) error {
			ms, err := sides[side].Messages(ctx, "read", 0, 1000)
			if err == nil && len(ms) != 1000 {
				err = fmt.Errorf("%d messages", len(ms))
			}
			return err
		})
	})
	// The sealed session data: a Load of a conversation with a long
	// system prompt, tasks and a policy document (and one message).
	b.Run("LoadSessionData", func(b *testing.B) {
		c := store.NewConversation("data")
		for i := range 40 {
			c.Config.SystemPrompt += fmt.Sprintf("Rule %d: answer the customer politely and cite the contract. ", i)
			c.Tasks = append(c.Tasks, store.Task{ID: fmt.Sprint(i), Content: fmt.Sprintf("task %d: check the invoice lines", i),
				Status: store.TaskPending, Priority: store.PriorityMedium})
		}
		c.Config.PermissionPolicy = []byte(`{"allow":["read","grep"],"deny":["rm"]}`)
		c.Messages = []store.Message{msg}
		for _, cs := range sides {
			if _, err := cs.Save(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		benchAlternate(b, func(side int) error {
			got, err := sides[side].Load(ctx, "data")
			if err == nil && (len(got.Tasks) != 40 || got.Config.SystemPrompt != c.Config.SystemPrompt) {
				err = fmt.Errorf("loaded %d tasks", len(got.Tasks))
			}
			return err
		})
	})
	// An append that is indexed on both sides: the plain store's by the
	// trigger, the encrypted store's by the search opt-in (the library
	// writes the document from the plaintext): the cost of encryption
	// with the search index on both sides.
	b.Run("AppendSearchOptIn", func(b *testing.B) {
		st, err := h.OpenWith(ctx, h.NewLocation(b), time.Now, Options{Durability: o.Durability, Keys: ring, SearchEncrypted: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { closeBench(b, st) })
		pair := []store.Conversations{sides[0], st.Conversations()}
		for _, cs := range pair {
			if _, err := cs.Save(ctx, store.NewConversation("indexed")); err != nil {
				b.Fatal(err)
			}
		}
		benchAlternate(b, func(side int) error {
			_, err := pair[side].AppendMessages(ctx, "indexed", msg)
			return err
		})
	})
}
