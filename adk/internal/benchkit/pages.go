package benchkit

import (
	"context"
	"database/sql"
	"fmt"
)

// PagesPerCreate counts the database pages one session create writes:
// it empties the write-ahead log through db (a connection of its own to
// the target's file, in WAL mode), creates a session through t, and
// reads how many frames the log holds then (PRAGMA wal_checkpoint
// reports it): each frame is one page written, and the last one carries
// the commit, which at synchronous=FULL is followed by the one fsync of
// the log. It returns the mean over n creates, each with the given
// initial state.
func PagesPerCreate(ctx context.Context, t Target, db *sql.DB, n int, state map[string]any) (float64, error) {
	total := 0
	for i := range n {
		frames, err := PagesOf(ctx, db, func() error {
			return t.Create(ctx, benchApp, "pages", fmt.Sprintf("p%d-%d", createSeq.Add(1), i), state)
		})
		if err != nil {
			return 0, err
		}
		total += frames
	}
	return float64(total) / float64(n), nil
}

// CreatePages counts a create's pages as the pages tests report them:
// after 10 creates that grow the file and its tables (not counted), the
// mean of 10 creates without state and of 10 with a one-key state.
func CreatePages(ctx context.Context, t Target, db *sql.DB) (bare, withState float64, err error) {
	oneKey := map[string]any{"turn": 0.0}
	if _, err = PagesPerCreate(ctx, t, db, 10, oneKey); err != nil {
		return 0, 0, err
	}
	if bare, err = PagesPerCreate(ctx, t, db, 10, nil); err != nil {
		return 0, 0, err
	}
	withState, err = PagesPerCreate(ctx, t, db, 10, oneKey)
	return bare, withState, err
}

// PagesOf counts the database pages op writes, as PagesPerCreate counts a
// create's: it empties the write-ahead log through db, runs op, and
// returns the frames the log holds then.
func PagesOf(ctx context.Context, db *sql.DB, op func() error) (int, error) {
	if err := emptyLog(ctx, db); err != nil {
		return 0, err
	}
	if err := op(); err != nil {
		return 0, err
	}
	return logFrames(ctx, db)
}
