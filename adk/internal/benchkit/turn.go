package benchkit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentstore/sessionstore/internal/walpages"

	"google.golang.org/adk/v2/session"
)

// The runner turn (issue 36): what an ADK runner does with its session
// service on every turn of a conversation. It reads the whole session
// (the history it builds the prompt from), appends the user's event, and
// appends the model's reply. The read comes right after the previous
// turn's writes, so no cache of an unchanged session can serve it.

// TurnEvents is the number of events of the session a turn workload
// starts from; TurnCount the turns of one round (each adds two events, so
// the last turns read about TurnEvents+2*TurnCount events).
const (
	TurnEvents = 200
	TurnCount  = 100
	// turnOthers sessions of turnOtherEvents events each fill the table
	// around the turn's session, as a store that serves other
	// conversations holds (ADK's reads slow as its events table grows).
	turnOthers      = 20
	turnOtherEvents = 1_000
)

// turnText is the 1 KiB text part of every turn event.
var turnText = strings.Repeat("The quick brown fox jumps over the lazy dog, again and again. ", 17)[:1024]

// TurnEvent returns the i-th event of a runner's conversation, built as
// ADK's runner builds it (session.NewEvent, so it carries a fresh id and
// time and an empty artifact delta): a 1 KiB text part and a state delta.
// Even i are the user's events (role user, author "user", a one-key
// delta); odd i the model's replies (role model, usage metadata, a finish
// reason and a two-key delta).
func TurnEvent(i int) *session.Event {
	ev := session.NewEvent(context.Background(), fmt.Sprintf("inv-%d", i/2))
	if i%2 == 0 {
		ev.Author = "user"
		ev.Content = genai.NewContentFromText(turnText, genai.RoleUser)
		ev.Actions.StateDelta["last_user_turn"] = float64(i / 2)
		return ev
	}
	ev.Author = "assistant"
	ev.Content = genai.NewContentFromText(turnText, genai.RoleModel)
	ev.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: int32(120 + i), CandidatesTokenCount: 250, TotalTokenCount: int32(370 + i),
	}
	ev.FinishReason = genai.FinishReasonStop
	ev.ModelVersion = "gemini-2.5-flash"
	ev.TurnComplete = true
	ev.Actions.StateDelta["turn"] = float64(i / 2)
	ev.Actions.StateDelta["progress"] = map[string]any{"step": float64(i / 2), "done": false}
	return ev
}

// seedTurn: the session "t0" of TurnEvents turn events, and turnOthers
// sessions of turnOtherEvents events (benchkit.Event's shapes) of the
// same user around it.
func seedTurn(ctx context.Context, t Target) error {
	for s := range turnOthers {
		id := fmt.Sprintf("o%d", s)
		if err := t.Create(ctx, benchApp, userU, id, nil); err != nil {
			return err
		}
		hd, err := t.Handle(ctx, benchApp, userU, id)
		if err != nil {
			return err
		}
		for i := range turnOtherEvents {
			if err := t.Append(ctx, hd, Event(i)); err != nil {
				return err
			}
		}
	}
	if err := t.Create(ctx, benchApp, userU, "t0", nil); err != nil {
		return err
	}
	hd, err := t.Handle(ctx, benchApp, userU, "t0")
	if err != nil {
		return err
	}
	for i := range TurnEvents {
		if err := t.Append(ctx, hd, TurnEvent(i)); err != nil {
			return err
		}
	}
	return nil
}

// runTurn runs TurnCount turns on "t0" (see Turn). It times the whole
// turns, or (getOnly) the reads of the turns alone; the turns are the
// same either way. The round time is not a limit: a round is its
// TurnCount turns.
func runTurn(getOnly bool) func(context.Context, Target, time.Duration) (int, time.Duration, error) {
	return func(ctx context.Context, t Target, _ time.Duration) (int, time.Duration, error) {
		var timed time.Duration
		if !getOnly {
			begin(ctx) // the turns are timed back to back: their CPU is the round's
		}
		for turn := range TurnCount {
			start := time.Now()
			read, err := Turn(ctx, t, "t0", TurnEvents, turn)
			if err != nil {
				return turn, 0, err
			}
			if getOnly {
				timed += read
			} else {
				timed += time.Since(start)
			}
		}
		return TurnCount, timed, nil
	}
}

// SeedTurn fills a store with the turn workload's data: the session
// "t0" of TurnEvents events among turnOthers sessions of
// turnOtherEvents events (app "bench", user "u").
func SeedTurn(ctx context.Context, t Target) error { return seedTurn(ctx, t) }

// Turn runs the turn-th turn on the session id of app "bench", user "u",
// which held first events before its first turn: it reads the whole
// session (through t.Read, touching every event), then appends the
// user's event and the reply through the session read. It returns the
// time the read took.
func Turn(ctx context.Context, t Target, id string, first, turn int) (time.Duration, error) {
	start := time.Now()
	h, n, err := t.Read(ctx, benchApp, userU, id)
	if err != nil {
		return 0, err
	}
	read := time.Since(start)
	if want := first + 2*turn; n != want {
		return 0, fmt.Errorf("turn %d read %d events, want %d", turn, n, want)
	}
	i := first + 2*turn
	if err := t.Append(ctx, h, TurnEvent(i)); err != nil {
		return 0, err
	}
	if err := t.Append(ctx, h, TurnEvent(i+1)); err != nil {
		return 0, err
	}
	return read, nil
}

// PagesPerAppend counts the database pages one append of a runner's
// event (TurnEvent: a 1 KiB text part and a state delta) writes through
// t, as PagesPerCreate counts a create's: the mean over n appends to one
// session (created first, with a history of 20 events), each from an
// emptied log.
func PagesPerAppend(ctx context.Context, t Target, db *sql.DB, n int) (float64, error) {
	pages, _, err := pagesPerAppend(ctx, t, db, n, "")
	return pages, err
}

// PagesPerAppendByObject is PagesPerAppend that also names the table or
// index each page belongs to (walpages.Objects, with walPath the
// database's -wal file): the mean pages per append of each.
func PagesPerAppendByObject(ctx context.Context, t Target, db *sql.DB, n int, walPath string) (float64, map[string]float64, error) {
	return pagesPerAppend(ctx, t, db, n, walPath)
}

func pagesPerAppend(ctx context.Context, t Target, db *sql.DB, n int, walPath string) (float64, map[string]float64, error) {
	id := fmt.Sprintf("pa%d", createSeq.Add(1))
	if err := t.Create(ctx, benchApp, "pages", id, nil); err != nil {
		return 0, nil, err
	}
	h, err := t.Handle(ctx, benchApp, "pages", id)
	if err != nil {
		return 0, nil, err
	}
	for i := range 20 {
		if err := t.Append(ctx, h, TurnEvent(i)); err != nil {
			return 0, nil, err
		}
	}
	total := 0
	var by map[string]float64
	if walPath != "" {
		by = map[string]float64{}
	}
	for i := range n {
		frames, err := PagesOf(ctx, db, func() error { return t.Append(ctx, h, TurnEvent(20+i)) })
		if err != nil {
			return 0, nil, err
		}
		total += frames
		if by != nil {
			objs, err := walpages.Objects(ctx, db, walPath)
			if err != nil {
				return 0, nil, err
			}
			for name, k := range objs {
				by[name] += float64(k) / float64(n)
			}
		}
	}
	return float64(total) / float64(n), by, nil
}

// emptyLog checkpoints the write-ahead log through db and checks that it
// is empty. The store's own checkpointer may be running a checkpoint at
// that moment (busy): it tries again, a bounded number of times.
func emptyLog(ctx context.Context, db *sql.DB) error {
	var busy, before, done int
	for range 200 {
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return err
		}
		if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &before, &done); err != nil {
			return err
		}
		if busy == 0 && before == 0 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("the log was not emptied (busy %d, %d frames)", busy, before)
}

// logFrames returns the frames the write-ahead log holds (a PASSIVE
// checkpoint reports them), trying again while the store's own
// checkpointer is running one.
func logFrames(ctx context.Context, db *sql.DB) (int, error) {
	var busy, frames, done int
	for range 200 {
		if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
			return 0, err
		}
		if busy == 0 && frames >= 0 {
			return frames, nil
		}
		time.Sleep(time.Millisecond)
	}
	return 0, fmt.Errorf("the log's frames could not be read (busy %d)", busy)
}
