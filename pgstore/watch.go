package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/store"
)

// How a feed learns of other processes' commits
//
// While a change feed of the store is open, the store holds a connection of
// its own that LISTENs on the schema's feed channel (the SQL function
// sessionstore_feed_channel, migration 7). Statement triggers on the
// watched tables send NOTIFY on that channel, but only while the sequence
// sessionstore_feed_gate is ahead of the server's clock: a NOTIFY makes
// committing transactions of the whole database take one lock in turn, a
// cost writers must not pay while nobody listens. A listening store keeps
// the gate feedGateTTL ahead, renewing it every feedGateRenew; when the
// last listener is gone (even killed) the gate lapses by itself.
//
// Notifications only say when to read again: every read returns everything
// committed after the feed's position. A statement that checked the gate
// just before a new listener opened it, and committed after that
// listener's first read, sends nothing: every renewal also wakes the feeds,
// so such a commit is delivered at the latest one renewal later.

const (
	feedGateRenew = 5 * time.Second
	feedGateTTL   = 20 * time.Second
	// feedFirstRecheck is the extra wake-up shortly after a listener
	// (re)connected: the common case of the race described above.
	feedFirstRecheck = 200 * time.Millisecond
)

// feedGateSQL pushes the gate feedGateTTL ($1, milliseconds) ahead of the
// server's clock, never back.
const feedGateSQL = `SELECT setval('sessionstore_feed_gate',
	greatest(last_value, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $1))
	FROM sessionstore_feed_gate`

// Feed returns the change feed of the store (see store.Feed).
func (s *Store) Feed() store.Feed { return s.core.Feed(s.governedState) }

// govFeedSQL reads a governed session as stored, with its feed epoch.
const govFeedSQL = `SELECT ` + govColumns + `, epoch FROM governed_sessions WHERE id = $1`

type govFeedRow struct {
	govRow
	Epoch int64 `db:"epoch"`
}

// governedState reads a governed session for its feed: the stored status
// (not adjusted for expiry) and the epoch.
func (s *Store) governedState(ctx context.Context, id string) (store.Session, int64, error) {
	var row govFeedRow
	err := s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, govFeedSQL, id)
		if err != nil {
			return err
		}
		row, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[govFeedRow])
		return err
	})
	if errNoRows(err) {
		return store.Session{}, 0, &store.NotFoundError{Resource: "session", ID: id}
	}
	if err != nil {
		return store.Session{}, 0, err
	}
	return row.session(), row.Epoch, nil
}

// listenFeed is the core's FeedWake: it LISTENs on the feed channel on a
// connection of its own and keeps the gate open, calling wake for each
// notification, after every (re)connect and at every renewal, until ctx
// ends. A failed connection is retried; meanwhile the renewals keep the
// feeds reading.
func (s *Store) listenFeed(ctx context.Context, wake func()) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.renewFeedGate(ctx, wake) })
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := s.listenFeedOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		s.cfg.logger.Warn("pgstore: change feed listener failed; retrying", "err", err)
		wake()
		if sleep(ctx, min(time.Duration(attempt)*100*time.Millisecond, feedGateRenew)) != nil {
			return
		}
	}
}

func (s *Store) listenFeedOnce(ctx context.Context, wake func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var channel string
	if err := conn.QueryRow(ctx, "SELECT sessionstore_feed_channel(current_schema())").Scan(&channel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	// Open the gate only now: a writer that sees it open notifies a
	// channel that is listened to.
	if _, err := conn.Exec(ctx, feedGateSQL, feedGateTTL.Milliseconds()); err != nil {
		return err
	}
	wake() // anything committed before the gate opened
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}

// renewFeedGate keeps the gate open and wakes the feeds shortly after the
// start and at every renewal, until ctx ends.
func (s *Store) renewFeedGate(ctx context.Context, wake func()) {
	t := time.NewTimer(feedFirstRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.pool.Exec(ctx, feedGateSQL, feedGateTTL.Milliseconds()); err != nil && ctx.Err() == nil {
			s.cfg.logger.Warn("pgstore: renewing the change feed gate failed", "err", err)
		}
		wake()
		t.Reset(feedGateRenew)
	}
}
