package benchkit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"google.golang.org/adk/v2/session"
)

// ServiceTarget is the Target of an ADK session.Service.
type ServiceTarget struct {
	Svc session.Service
	// Closer closes the store under the service.
	Closer func() error
}

// Create implements Target.
func (t *ServiceTarget) Create(ctx context.Context, app, user, id string, state map[string]any) error {
	_, err := t.Svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: id, State: state})
	return err
}

// Handle implements Target: the session read with its last event.
func (t *ServiceTarget) Handle(ctx context.Context, app, user, id string) (any, error) {
	got, err := t.Svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id, NumRecentEvents: 1})
	if err != nil {
		return nil, err
	}
	return got.Session, nil
}

// Append implements Target.
func (t *ServiceTarget) Append(ctx context.Context, h any, ev *session.Event) error {
	return t.Svc.AppendEvent(ctx, h.(session.Session), ev)
}

// Get implements Target. Every event's content and state delta are read,
// as a runner building the next prompt does.
func (t *ServiceTarget) Get(ctx context.Context, app, user, id string, recent int) (int, error) {
	_, n, err := t.get(ctx, app, user, id, recent)
	return n, err
}

// Read implements Target: Get of the whole session, which is the handle.
func (t *ServiceTarget) Read(ctx context.Context, app, user, id string) (any, int, error) {
	return t.get(ctx, app, user, id, 0)
}

func (t *ServiceTarget) get(ctx context.Context, app, user, id string, recent int) (session.Session, int, error) {
	got, err := t.Svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id, NumRecentEvents: recent})
	if err != nil {
		return nil, 0, err
	}
	n, err := touch(got.Session)
	return got.Session, n, err
}

// touch reads every event's text and state delta, as a runner building
// its next prompt does, and returns the number of events.
func touch(s session.Session) (int, error) {
	n, text := 0, 0
	for ev := range s.Events().All() {
		n++
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				text += len(p.Text)
			}
		}
		text += len(ev.Actions.StateDelta)
	}
	if n > 0 && text == 0 {
		return n, fmt.Errorf("events without content")
	}
	return n, nil
}

// List implements Target; every session's state is read.
func (t *ServiceTarget) List(ctx context.Context, app, user string) (int, error) {
	got, err := t.Svc.List(ctx, &session.ListRequest{AppName: app, UserID: user})
	if err != nil {
		return 0, err
	}
	keys := 0
	for _, s := range got.Sessions {
		for range s.State().All() {
			keys++
		}
	}
	if keys < len(got.Sessions) {
		return len(got.Sessions), fmt.Errorf("%d sessions with %d state keys", len(got.Sessions), keys)
	}
	return len(got.Sessions), nil
}

// Close implements Target.
func (t *ServiceTarget) Close() error {
	if t.Closer != nil {
		return t.Closer()
	}
	return nil
}

// WorkerRequest asks the worker process for one round.
type WorkerRequest struct {
	Workload  string        `json:"workload"`
	Sync      string        `json:"sync"`
	RoundTime time.Duration `json:"round_time"`
}

// ServeWorker answers WorkerRequests read from in, one JSON line each,
// with one Result line each on out, until in ends.
func ServeWorker(ctx context.Context, tp *Templates, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req WorkerRequest
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			res.Error = err.Error()
		} else if w, ok := WorkloadByName(req.Workload); !ok {
			res.Error = "unknown workload " + req.Workload
		} else if r, err := tp.Round(ctx, w, req.Sync, req.RoundTime); err != nil {
			res.Error = err.Error()
		} else {
			res = r
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return sc.Err()
}
