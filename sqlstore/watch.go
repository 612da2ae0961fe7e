package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// DefaultFeedPollInterval is how often, while a change feed of the store is
// open, the store checks whether another process committed (see
// WithFeedPoll).
const DefaultFeedPollInterval = 5 * time.Millisecond

// WithFeedPoll sets how often, while at least one change feed (Store.Feed)
// is open, the store checks whether another connection committed (PRAGMA
// data_version, on a connection of its own; default 5ms). After a commit
// of another process or Store the check runs every d, and while nothing
// changes it slows down to 10 × d, so a feed waits at most d for the next
// commit of a busy stream and at most 10 × d for the first after a quiet
// spell. Commits made through the same Store wake its feeds at once. No
// check runs while no feed is open.
func WithFeedPoll(d time.Duration) Option {
	return func(c *config) { c.feedPoll = d }
}

// Feed returns the change feed of the store (see store.Feed).
func (s *Store) Feed() store.Feed { return s.core.Feed(s.governedState) }

// govFeedSQL reads a governed session as stored, with its feed epoch.
const govFeedSQL = `SELECT ` + govColumns + `, epoch FROM governed_sessions WHERE id = ?`

// governedState reads a governed session for its feed: the stored status
// (not adjusted for expiry) and the epoch.
func (s *Store) governedState(ctx context.Context, id string) (store.Session, int64, error) {
	var row govRow
	var epoch int64
	err := s.scan(ctx, govFeedSQL, []any{id}, append(row.dest(), &epoch)...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, 0, &store.NotFoundError{Resource: "session", ID: id}
	}
	if err != nil {
		return store.Session{}, 0, mapErr(err)
	}
	sess, err := row.session()
	return sess, epoch, err
}

// feedIdleFactor × the poll interval is the slowest the poll gets while
// nothing is committed.
const feedIdleFactor = 10

// watchDataVersion is the core's FeedWake: while a feed is open it polls
// PRAGMA data_version on a connection of its own, which changes whenever
// another connection (this store's writer included) committed, and calls
// wake when it did, until ctx ends.
func (s *Store) watchDataVersion(ctx context.Context, wake func()) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := s.pollDataVersion(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		s.cfg.logger.Warn("sqlstore: change feed poller failed; retrying", "err", err)
		wake() // let the feeds read (and report a broken database themselves)
		t := time.NewTimer(min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (s *Store) pollDataVersion(ctx context.Context, wake func()) error {
	conn, closeConn, err := s.feedConn(ctx)
	if err != nil {
		return err
	}
	defer closeConn()
	st, err := conn.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		return err
	}
	defer st.Close()
	var last int64
	if err := st.QueryRowContext(ctx).Scan(&last); err != nil {
		return err
	}
	// Anything committed before the first version read and after a feed's
	// first read is caught by one more read.
	wake()
	// The poll runs every feedPoll after a commit was seen and slows down,
	// doubling, to feedIdleFactor × feedPoll while nothing changes: the
	// wake-ups are the main cost of an idle feed (a data_version check
	// itself costs about 10 µs).
	fast := s.cfg.feedPoll
	slow := feedIdleFactor * fast
	every := fast
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		var v int64
		if err := st.QueryRowContext(ctx).Scan(&v); err != nil {
			return err
		}
		if v != last {
			last, every = v, fast
			wake()
		} else {
			every = min(2*every, slow)
		}
		t.Reset(every)
	}
}

// feedConn returns the poller's connection: a read-only connection of its
// own for a store opened with Open, one of the caller's connections for
// OpenDB (held while a feed is open).
func (s *Store) feedConn(ctx context.Context) (*sql.Conn, func(), error) {
	if s.path == "" {
		conn, err := s.reads.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		return conn, func() { conn.Close() }, nil
	}
	db, err := sql.Open(driverName, readDSN(s.path, &s.cfg))
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); db.Close() }, nil
}
