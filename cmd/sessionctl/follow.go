package main

// Following a stream (messages --follow, traces --follow, runs --follow,
// agents events --follow): print what is stored from a start position,
// then every row as it commits, until the context is cancelled (Ctrl-C).
// The rows come from the store's change feed (store.Feed): in position
// order, each once, also when another process writes them; the feed
// resumes by position, so a missed wake-up delays a row but never loses
// one.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/store"
)

// followLimit is the batch size of a follow: the feed's page.
const followLimit = 500

// follow prints the batches of feed with line (human output) or as one
// compact JSON object per item (asJSON), flushing after every batch. It
// returns nil when ctx is cancelled (the normal end: Ctrl-C), and the
// feed's error otherwise: ErrNotFound when the followed object was
// deleted, a *store.FeedResetError when its stream was rewritten.
func follow[T any](ctx context.Context, g *globals, feed iter.Seq2[store.Batch[T], error], asJSON bool, header string, line func(T) string) error {
	return followAs(ctx, g, feed, asJSON, header, line, func(it T) any { return it })
}

// followAs is follow with the JSON object of an item made by obj.
func followAs[T any](ctx context.Context, g *globals, feed iter.Seq2[store.Batch[T], error], asJSON bool, header string, line func(T) string, obj func(T) any) error {
	out := g.stdout
	if asJSON {
		out = termout.Raw(g.stdout)
	} else if header != "" {
		if _, err := fmt.Fprintln(out, header); err != nil {
			return err
		}
	}
	for batch, err := range feed {
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return err
		}
		for _, it := range batch.Items {
			if asJSON {
				err = jsonout.Encode(out, obj(it), "")
			} else {
				_, err = io.WriteString(out, line(it)+"\n")
			}
			if err != nil {
				return err
			}
		}
		if f, ok := termout.Raw(g.stdout).(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// followErr explains a feed's reset (other errors pass unchanged).
func followErr(what string, err error) error {
	if errors.Is(err, store.ErrFeedReset) {
		return &feedResetError{what: what, err: err}
	}
	return err
}

// feedResetError is a feed reset said in one sentence for the operator
// (the feed's epochs and the store's own text stay out of it); it
// matches the store's error for the exit status.
type feedResetError struct {
	what string
	err  error
}

func (e *feedResetError) Error() string {
	return e.what + " was rewritten while followed; run the command again to reload it"
}

// Unwrap returns the store's error.
func (e *feedResetError) Unwrap() error { return e.err }
