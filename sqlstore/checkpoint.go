package sqlstore

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpoints off the commit path. SQLite's automatic checkpoint runs
// inside the COMMIT that crosses its threshold (1,000 WAL pages): that
// commit copies every page back into the database file and syncs it, and
// every caller of its batch waits. Profiled at synchronous=NORMAL, that was
// a third of the mean time of a Use and of an event append, and most of
// their p99. The store's writer connection therefore runs with
// wal_autocheckpoint=0, and a checkpointer goroutine runs PASSIVE
// checkpoints on a connection of its own, concurrently with the writer:
// after every checkpointCommits commits, or checkpointIdle after the last
// commit when fewer came. A PASSIVE checkpoint never waits for a lock and
// never blocks the writer or a reader; what it cannot copy yet (a reader
// still needs those pages) it copies on a later round, and the WAL starts
// over from its beginning once everything is copied. Durability is
// unchanged: a commit is as durable as before the moment COMMIT returns,
// and the checkpoint only moves committed pages. Another process's store
// checkpoints the same file the same way; two checkpoints at once are one
// checkpoint and one no-op.
//
// A checkpoint running beside a writer that never pauses copies the frames
// that were in the log when it began, never the ones committed while it
// ran (it reports the log as it found it, so it even looks complete), and
// the WAL only starts over from its beginning once every frame is copied.
// Under a steady writer the log would therefore never restart: it grew
// without bound, every commit extended the -wal file (at FULL, an fsync
// that also commits the file's new size to the filesystem's journal, a
// third dearer than rewriting pages in place), and the fallback that was
// meant to stop it never fired. So after every background round the
// writer runs one checkpoint itself, between two transactions, after it
// has answered its batch (the caller that led the batch waits for it): it
// holds the write token, so nothing is appended while it copies the few
// frames committed during the round, and the next transaction starts the
// log over. That is once per round, a few hundred commits: at FULL two
// syncs of the checkpoint and one of the new log's header per round. When the round left
// nothing behind, that checkpoint finds nothing to copy and returns at
// once (no write, no sync).
const (
	checkpointCommits = 256
	checkpointIdle    = 250 * time.Millisecond

	// checkpointSQL's columns: busy, WAL frames, frames copied.
	checkpointSQL = "PRAGMA wal_checkpoint(PASSIVE)"
)

type checkpointer struct {
	db  *sql.DB
	log *slog.Logger

	mu      sync.Mutex
	pending int // commits since the last checkpoint was asked for
	timer   *time.Timer

	// rounds counts the background checkpoints that ran: the writer
	// finishes each one itself (see above).
	rounds atomic.Int64

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// startCheckpointer opens the checkpointer's connection on path and starts
// its goroutine.
func startCheckpointer(path string, cfg *config) (*checkpointer, error) {
	db, err := sql.Open(driverName, writeDSN(path, cfg))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{
		db:   db,
		log:  cfg.logger,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.run()
	return c, nil
}

// committed is called by the writer after each commit.
func (c *checkpointer) committed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending++
	if c.pending >= checkpointCommits {
		c.ask()
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(checkpointIdle, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.timer = nil
			if c.pending > 0 {
				c.ask()
			}
		})
	}
}

// ask requests a checkpoint; c.mu is held.
func (c *checkpointer) ask() {
	c.pending = 0
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	select {
	case c.kick <- struct{}{}:
	default: // one is already asked for
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var busy, log, copied int64
		err := c.db.QueryRowContext(ctx, checkpointSQL).Scan(&busy, &log, &copied)
		cancel()
		if err != nil {
			// A locked or busy database (another checkpoint, a process
			// holding an exclusive lock) is retried with the next round.
			c.log.Debug("sqlstore: background checkpoint", "err", err)
			continue
		}
		c.rounds.Add(1)
		c.log.Debug("sqlstore: background checkpoint", "wal_frames", log, "copied", copied)
	}
}

// close stops the goroutine (after the checkpoint in progress) and closes
// the connection. Commits still counted afterwards ask for nothing.
func (c *checkpointer) close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
		c.mu.Unlock()
		close(c.stop)
		<-c.done
		c.closeErr = c.db.Close()
	})
	return c.closeErr
}
