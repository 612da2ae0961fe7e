package archive

// Conversations: the conversation itself with its messages and cost
// records, and its artifacts, trace events, run records and verification
// reports.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/store"
)

var conversationsSection = section{
	key:     "conversations",
	export:  exportConversations,
	restore: restoreConversations,
}

// Conversation is one conversation in an export document, with every
// record the store keeps for it.
type Conversation struct {
	Conversation store.Conversation         `json:"conversation"`
	Artifacts    []store.Artifact           `json:"artifacts"`
	Traces       []store.TraceEvent         `json:"traces"`
	Runs         []store.RunRecord          `json:"runs"`
	Reports      []store.VerificationReport `json:"reports"`
	// DataKey, when set, is the id of the conversation's data key in the
	// exporting store's keyring, and Sealed holds its content sealed
	// with it (conv_sealed.go): the content fields above are then empty.
	DataKey string `json:"data_key,omitempty"`
	Sealed  string `json:"sealed,omitempty"`
}

// exportConversations writes every conversation, or those of x.ids, one
// at a time.
func exportConversations(ctx context.Context, x *exporter) error {
	conv := x.st.Conversations()
	list := func(cursor string) (store.Page[string], error) {
		page, err := conv.List(ctx, store.ConversationFilter{After: cursor, Limit: store.MaxPageSize})
		ids := store.Page[string]{Items: make([]string, len(page.Items)), Next: page.Next}
		for i, c := range page.Items {
			ids.Items[i] = c.ID
		}
		return ids, err
	}
	return items(ctx, x, "conversations", list, func(ctx context.Context, id string) (Conversation, error) {
		c, err := readConversation(ctx, conv, id)
		if err == nil && c.Conversation.DataKeyID != "" { // conv_sealed.go: never in plaintext
			err = c.seal(ctx, x.keys, c.Conversation.DataKeyID)
		}
		return c, err
	})
}

// readConversation reads everything the store keeps for conversation id.
func readConversation(ctx context.Context, conv store.Conversations, id string) (Conversation, error) {
	var x Conversation
	var err error
	if x.Conversation, err = conv.Load(ctx, id); err != nil {
		return x, err
	}
	if x.Artifacts, err = conv.Artifacts(ctx, id); err != nil {
		return x, err
	}
	if x.Traces, err = conv.Traces(ctx, id, 0, 0); err != nil {
		return x, err
	}
	if x.Runs, err = conv.Runs(ctx, id); err != nil {
		return x, err
	}
	if x.Reports, err = conv.Reports(ctx, id); err != nil {
		return x, err
	}
	x.Artifacts, x.Traces = nonNil(x.Artifacts), nonNil(x.Traces)
	x.Runs, x.Reports = nonNil(x.Runs), nonNil(x.Reports)
	return x, nil
}

// restoreConversations reads the conversations of a document and restores
// each with its records, exactly as exported.
func restoreConversations(ctx context.Context, x *importer, in *jsonIn, version int) error {
	seen := map[string]bool{}
	// A fork whose parent comes later in the section waits for it
	// (forks.go).
	q := newForkQueue()
	defer q.close()
	err := in.array(func(i int) error {
		var c Conversation
		if err := in.decode(&c); err != nil {
			return err
		}
		field := fmt.Sprintf("conversations[%d]", i)
		// As the document holds it (sealed content stays sealed).
		var aside []byte
		if fp := c.Conversation.ForkedFrom; fp != nil && q.waits(x, fp.ID) {
			var err error
			if aside, err = json.Marshal(c); err != nil {
				return err
			}
		}
		if err := c.open(ctx, x.keys, field); err != nil { // conv_sealed.go
			return err
		}
		if err := c.Validate(field); err != nil {
			return err
		}
		if version < 5 {
			// Lineage and compaction records of conversations came with
			// version 5: an older document cannot carry them.
			if c.Conversation.ForkedFrom != nil {
				return store.Invalid(field+".conversation.forked_from", fmt.Sprintf("not part of export version %d", version))
			}
			for j, m := range c.Conversation.Messages {
				if m.Compaction != nil {
					return store.Invalid(fmt.Sprintf("%s.conversation.messages[%d].compaction", field, j), fmt.Sprintf("not part of export version %d", version))
				}
			}
		}
		id := c.Conversation.ID
		if seen[id] {
			return store.Invalid("conversations", "id "+id+" appears twice")
		}
		seen[id] = true
		if aside != nil {
			return q.add(id, c.Conversation.ForkedFrom.ID, field, json.RawMessage(aside))
		}
		defer q.done(id)
		return x.putConversation(c)
	})
	if err != nil {
		return err
	}
	return q.flush(func(a aside, raw []byte) error {
		var c Conversation
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
		if err := c.open(ctx, x.keys, a.field); err != nil {
			return err
		}
		return x.putConversation(c)
	})
}

// putConversation restores one validated conversation.
func (x *importer) putConversation(c Conversation) error {
	return x.put(&x.counts.Conversations, "conversation "+c.Conversation.ID, func(w store.RecordWriter) (bool, error) {
		return w.PutConversation(store.ConversationRecord{Conversation: c.Conversation, Artifacts: c.Artifacts,
			Traces: c.Traces, Runs: c.Runs, Reports: c.Reports})
	})
}

// Validate checks c as the store would on import, without writing. field
// names c in errors; the error is an *InvalidInputError.
func (c *Conversation) Validate(field string) error {
	if _, _, err := store.NormalizeConversation(c.Conversation); err != nil {
		return prefixInvalid(field+".conversation", err)
	}
	for i := range c.Artifacts {
		if err := c.Artifacts[i].Validate(fmt.Sprintf("%s.artifacts[%d]", field, i)); err != nil {
			return err
		}
	}
	for i, e := range c.Traces {
		if err := e.Validate(fmt.Sprintf("%s.traces[%d]", field, i)); err != nil {
			return err
		}
	}
	for i, r := range c.Runs {
		if _, _, _, err := store.NormalizeRun(fmt.Sprintf("%s.runs[%d]", field, i), r, time.Now()); err != nil {
			return err
		}
	}
	for i, r := range c.Reports {
		if err := r.Validate(fmt.Sprintf("%s.reports[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}
