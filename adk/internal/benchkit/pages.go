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
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return 0, err
		}
		var busy, before, done int
		if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &before, &done); err != nil {
			return 0, err
		}
		if busy != 0 || before != 0 {
			return 0, fmt.Errorf("the log was not emptied (busy %d, %d frames)", busy, before)
		}
		if err := t.Create(ctx, benchApp, "pages", fmt.Sprintf("p%d-%d", createSeq.Add(1), i), state); err != nil {
			return 0, err
		}
		var frames int
		if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
			return 0, err
		}
		total += frames
	}
	return float64(total) / float64(n), nil
}
