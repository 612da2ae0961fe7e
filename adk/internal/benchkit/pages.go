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
