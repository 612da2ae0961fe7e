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
	parse:     parseConversations,
	prepare:   prepareConversations,
	restore:   restoreConversations,
	stats:     statsConversations,
	statsRows: statsConversationsRows,
	gc:        gcConversations,
	gcLines:   gcConversationsLines,
}

// exportConversations adds every conversation, or those of x.ids.
func exportConversations(ctx context.Context, x *exportRun) error {
	conv := x.st.Conversations()
	x.doc.Conversations = []convExport{}
	add := func(id string) error {
		c, err := exportConversation(ctx, conv, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted since it was listed, or not a conversation
		}
		if err != nil {
			return err
		}
		x.doc.Conversations = append(x.doc.Conversations, c)
		x.counts.Conversations++
		x.found[id] = true
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

// parseConversations validates the conversations of an export document.
func parseConversations(doc *exportDoc, _ int, f *importFile) error {
	seen := map[string]bool{}
	for i := range doc.Conversations {
		x := &doc.Conversations[i]
		if err := x.validate(fmt.Sprintf("conversations[%d]", i)); err != nil {
			return err
		}
		if seen[x.Conversation.ID] {
			return store.Invalid("conversations", "id "+x.Conversation.ID+" appears twice")
		}
		seen[x.Conversation.ID] = true
		x.Artifacts, x.Traces = nonNilSlice(x.Artifacts), nonNilSlice(x.Traces)
		f.conversations = append(f.conversations, *x)
	}
	return nil
}

// prepareConversations fails on a conversation id that exists, or drops
// it with --skip-existing.
func prepareConversations(ctx context.Context, x *importRun) error {
	var keep []convExport
	for _, c := range x.file.conversations {
		exists, err := x.st.Conversations().Exists(ctx, c.Conversation.ID)
		if err != nil {
			return err
		}
		if exists && !x.skip {
			return fmt.Errorf("%w: conversation %s exists (use --skip-existing)", store.ErrConflict, c.Conversation.ID)
		}
		if exists {
			x.doc.Skipped++
			continue
		}
		keep = append(keep, c)
	}
	x.file.conversations = keep
	return nil
}

// restoreConversations saves the conversations with their records.
func restoreConversations(ctx context.Context, x *importRun) error {
	for _, c := range x.file.conversations {
		if err := importConversation(ctx, x.st.Conversations(), x.clock, c); err != nil {
			return fmt.Errorf("conversation %s: %w", c.Conversation.ID, err)
		}
		x.doc.Conversations++
	}
	return nil
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
	c.Version = 0
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

// importConversation saves x: the conversation, then its records in
// batches the store accepts. The store stamps artifacts (created and
// updated), trace events and reports with its clock, so the clock reads
// each batch's exported time meanwhile; run records keep their own times.
// Record writes touch the conversation's update time, so when there were
// any, the conversation is saved once more with its own times. Message
// positions are renumbered from 0 (Save).
func importConversation(ctx context.Context, conv store.Conversations, clock *importClock, x convExport) error {
	defer clock.pin(time.Time{})
	c := x.Conversation
	c.Version = 0
	if _, err := conv.Save(ctx, c); err != nil {
		return err
	}
	id := c.ID
	wrote := false
	for _, part := range byTime(x.Artifacts, func(a store.Artifact) time.Time { return a.CreatedAt }) {
		clock.pin(part[0].CreatedAt)
		if err := conv.PutArtifacts(ctx, id, part...); err != nil {
			return err
		}
		wrote = true
	}
	// Replaced artifacts: putting them again at their update time keeps
	// their creation time.
	var replaced []store.Artifact
	for _, a := range x.Artifacts {
		if !a.UpdatedAt.IsZero() && !a.UpdatedAt.Equal(a.CreatedAt) {
			replaced = append(replaced, a)
		}
	}
	for _, part := range byTime(replaced, func(a store.Artifact) time.Time { return a.UpdatedAt }) {
		clock.pin(part[0].UpdatedAt)
		if err := conv.PutArtifacts(ctx, id, part...); err != nil {
			return err
		}
	}
	for i, part := range byTime(x.Traces, func(e store.TraceEvent) time.Time { return e.CreatedAt }) {
		clock.pin(part[0].CreatedAt)
		var err error
		if i == 0 {
			err = conv.SaveTraces(ctx, id, part)
		} else {
			_, err = conv.AppendTraces(ctx, id, part...)
		}
		if err != nil {
			return err
		}
		wrote = true
	}
	clock.pin(time.Time{})
	for _, part := range chunks(x.Runs) {
		if err := conv.PutRuns(ctx, id, part...); err != nil {
			return err
		}
		wrote = true
	}
	for i, part := range byTime(x.Reports, func(r store.VerificationReport) time.Time { return r.CreatedAt }) {
		clock.pin(part[0].CreatedAt)
		var err error
		if i == 0 {
			err = conv.SaveReports(ctx, id, part)
		} else {
			err = conv.AppendReports(ctx, id, part...)
		}
		if err != nil {
			return err
		}
		wrote = true
	}
	clock.pin(time.Time{})
	if wrote {
		if _, err := conv.Save(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// byTime splits s, in order, into runs of items with the same time (at)
// of at most store.MaxRecordsPerCall each: one store call per run, with
// the store's clock at that time. A zero time (a file written by hand)
// leaves the store's clock at the current time.
func byTime[T any](s []T, at func(T) time.Time) [][]T {
	var out [][]T
	for len(s) > 0 {
		n := 1
		for n < len(s) && n < store.MaxRecordsPerCall && at(s[n]).Equal(at(s[0])) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// chunks splits s into parts of at most store.MaxRecordsPerCall.
func chunks[T any](s []T) [][]T {
	var out [][]T
	for len(s) > 0 {
		n := min(len(s), store.MaxRecordsPerCall)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
