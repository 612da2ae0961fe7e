package main

// Maintenance of conversations: export and import (the conversation itself
// with its messages and cost records, and its artifacts, trace events, run
// records and verification reports), stats, and gc's retention (gc.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/store"
)

var convOps = facetOps{
	one: "conversation", many: "conversations",
	count:     func(c *facetCounts) *int64 { return &c.Conversations },
	section:   "conversations",
	export:    exportConversations,
	restore:   restoreConversations,
	stats:     statsConversations,
	statsRows: statsConversationsRows,
	gc:        gcConversations,
	gcLines:   gcConversationsLines,
}

// exportConversations writes every conversation, or those of x.ids, one
// at a time.
func exportConversations(ctx context.Context, x *exportRun) error {
	conv := x.st.Conversations()
	x.out.open("conversations", '[')
	defer x.out.close(']')
	add := func(id string) error {
		c, err := exportConversation(ctx, conv, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted since it was listed, or not a conversation
		}
		if err != nil {
			return err
		}
		x.out.value("", c)
		x.counts.Conversations++
		x.tick()
		return nil
	}
	if x.ids != nil {
		for _, id := range x.ids {
			if err := add(id); err != nil {
				return err
			}
		}
		return nil
	}
	f := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := conv.List(ctx, f)
		if err != nil {
			return err
		}
		for _, c := range page.Items {
			if err := add(c.ID); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		f.After = page.Next
	}
}

// restoreConversations reads the conversations of an export document and
// restores each with its records, exactly as exported.
func restoreConversations(ctx context.Context, x *importRun, in *jsonIn, _ int) error {
	seen := map[string]bool{}
	return in.array(func(i int) error {
		var c convExport
		if err := in.decode(&c); err != nil {
			return err
		}
		if err := c.validate(fmt.Sprintf("conversations[%d]", i)); err != nil {
			return err
		}
		id := c.Conversation.ID
		if seen[id] {
			return store.Invalid("conversations", "id "+id+" appears twice")
		}
		seen[id] = true
		return x.putConversation(c)
	})
}

// putConversation restores one validated conversation.
func (x *importRun) putConversation(c convExport) error {
	return x.put(&x.counts.Conversations, "conversation "+c.Conversation.ID, func(w store.RecordWriter) (bool, error) {
		return w.PutConversation(store.ConversationRecord{Conversation: c.Conversation, Artifacts: c.Artifacts,
			Traces: c.Traces, Runs: c.Runs, Reports: c.Reports})
	})
}

func statsConversations(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Conversations, err = countConversations(ctx, st.Conversations())
	return err
}

func statsConversationsRows(doc *statsJSON) [][2]string {
	c := doc.Conversations
	return [][2]string{
		{"conversations", convCountsText(c)},
		{"messages", fmt.Sprint(c.Messages)},
		{"tokens, cost", fmt.Sprintf("%d, %s", c.TotalTokens, usd(c.TotalCostUSD))},
	}
}

// convExport is one conversation in an export file.
type convExport struct {
	Conversation store.Conversation         `json:"conversation"`
	Artifacts    []store.Artifact           `json:"artifacts"`
	Traces       []store.TraceEvent         `json:"traces"`
	Runs         []store.RunRecord          `json:"runs"`
	Reports      []store.VerificationReport `json:"reports"`
}

// exportConversation reads everything the store keeps for conversation id.
func exportConversation(ctx context.Context, conv store.Conversations, id string) (convExport, error) {
	var x convExport
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
	x.Artifacts, x.Traces = nonNilSlice(x.Artifacts), nonNilSlice(x.Traces)
	x.Runs, x.Reports = nonNilSlice(x.Runs), nonNilSlice(x.Reports)
	return x, nil
}

// validate checks x as the store would on import, without writing. The
// error is an *InvalidInputError.
func (x *convExport) validate(field string) error {
	c := x.Conversation
	if _, _, err := store.NormalizeConversation(c); err != nil {
		return prefixInvalid(field+".conversation", err)
	}
	for i := range x.Artifacts {
		if err := x.Artifacts[i].Validate(fmt.Sprintf("%s.artifacts[%d]", field, i)); err != nil {
			return err
		}
	}
	for i, e := range x.Traces {
		if err := e.Validate(fmt.Sprintf("%s.traces[%d]", field, i)); err != nil {
			return err
		}
	}
	for i, r := range x.Runs {
		if _, _, _, err := store.NormalizeRun(fmt.Sprintf("%s.runs[%d]", field, i), r, time.Now()); err != nil {
			return err
		}
	}
	for i, r := range x.Reports {
		if err := r.Validate(fmt.Sprintf("%s.reports[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

// prefixInvalid puts field in front of an invalid-input error's field.
func prefixInvalid(field string, err error) error {
	if ie, ok := err.(*store.InvalidInputError); ok {
		return store.Invalid(field+"."+ie.Field, ie.Reason)
	}
	return err
}
