package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// The writer process of TestExportUnderLoad: the test binary run again
// with these variables set writes to the store at writerDB until the file
// at writerStop exists (or a minute has passed).
const (
	writerDB   = "ARCHIVE_TEST_WRITER_DB"
	writerStop = "ARCHIVE_TEST_WRITER_STOP"
)

func TestMain(m *testing.M) {
	if ok, err := runShredHelper(); ok { // shred_test.go
		if err != nil {
			fmt.Fprintln(os.Stderr, "shred helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if loc := os.Getenv(writerDB); loc != "" {
		if err := runWriter(loc, os.Getenv(writerStop)); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	sqltest.Cleanup()
	pgtest.DropTemplate()
	os.Exit(code)
}

// openAt opens the store at loc: a PostgreSQL URL or a SQLite file.
func openAt(ctx context.Context, loc string) (archive.Store, error) {
	if pgstore.IsURL(loc) {
		return pgstore.Open(ctx, loc)
	}
	return sqlstore.Open(ctx, loc)
}

// runWriter creates governed sessions with spend limits, reserves,
// settles and uses them, appends messages to conversations and events to
// agent sessions, round after round, until stop exists.
func runWriter(loc, stop string) error {
	ctx := context.Background()
	st, err := openAt(ctx, loc)
	if err != nil {
		return err
	}
	defer st.Close()
	deadline := time.Now().Add(time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		if _, err := os.Stat(stop); err == nil {
			return nil
		}
		id := fmt.Sprintf("w-%04d", i)
		agent := fmt.Sprintf("agent-%d", i%3)
		if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: id, AgentID: agent, AuthorizedTools: []string{"*"},
			CallBudget: 10, TimeLimit: time.Hour,
			SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Limit: 1_000_000}}}); err != nil {
			return err
		}
		if i%3 == 0 {
			if err := st.Spend().SetAgentLimits(ctx, agent, []store.SpendLimit{{Metric: store.MetricInputTokens, Limit: 1 << 40}}); err != nil {
				return err
			}
		}
		if _, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: id, RequestID: "r", Amount: store.SpendAmount{InputTokens: 100}}); err != nil {
			return err
		}
		if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read", "grep"}}); err != nil {
			return err
		}
		if i%2 == 0 {
			if _, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: id, RequestID: "r", Actual: store.SpendAmount{InputTokens: 60}}); err != nil {
				return err
			}
		}
		conv := fmt.Sprintf("c-%d", i%4)
		if i < 4 {
			if _, err := st.Conversations().Save(ctx, store.NewConversation(conv)); err != nil {
				return err
			}
		}
		if _, err := st.Conversations().AppendMessages(ctx, conv, store.UserMessage(fmt.Sprintf("message %d", i))); err != nil {
			return err
		}
		key := store.SessionKey{App: "app", User: fmt.Sprintf("u-%d", i%5%2), Session: fmt.Sprintf("s-%d", i%5)}
		if i < 5 {
			if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				return err
			}
		}
		if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: id, Data: json.RawMessage(`{"text":"x"}`)},
			Delta: store.ScopedState{User: map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprint(i))}}}); err != nil {
			return err
		}
	}
	return nil
}

// TestExportUnderLoad: exports taken while another process writes to
// every facet all import into an empty store, whose audit trail verifies:
// each export is one snapshot, never limits or reservations of a session
// it does not hold, never an audit chain cut short of its head.
func TestExportUnderLoad(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		exportUnderLoad(t, filepath.Join(t.TempDir(), "live.db"), sqliteBackend)
	})
	t.Run("postgres", func(t *testing.T) { exportUnderLoad(t, pgtest.NewStore(t), postgresBackend) })
}

func exportUnderLoad(t *testing.T, loc string, dst backend) {
	ctx := t.Context()
	st, err := openAt(ctx, loc)
	must(t, err)
	defer st.Close()
	stop := filepath.Join(t.TempDir(), "stop")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerDB+"="+loc, writerStop+"="+stop)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		os.WriteFile(stop, nil, 0o600)
		if err := <-done; err != nil {
			t.Errorf("writer process: %v\n%s", err, stderr.String())
		}
	}()
	// Wait until the writer has written something.
	for {
		page, err := st.Governance().List(ctx, store.ListFilter{Limit: 1})
		must(t, err)
		if len(page.Items) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the writer stopped before writing: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	const exports = 6
	var last archive.Counts
	for i := range exports {
		var buf bytes.Buffer
		// A slow reader (a slow disk or network under the writer of the
		// document): each governed session written gives the writer time
		// to commit, so that what the spend section and the facets after
		// it read has changed since the governed sessions were read.
		slow := func(p archive.ExportProgress) {
			if p.Section == "governed sessions" {
				time.Sleep(2 * time.Millisecond)
			}
		}
		counts, err := archive.Export(ctx, st, &buf, archive.ExportOptions{Progress: slow})
		if err != nil {
			t.Fatalf("export %d: %v", i, err)
		}
		imported := dst.open(t)
		res, err := archive.Import(ctx, imported, &buf, archive.ImportOptions{})
		if err != nil {
			t.Fatalf("export %d (%+v) does not import: %v", i, counts, err)
		}
		if res.Counts != counts {
			t.Errorf("export %d: wrote %+v, imported %+v", i, counts, res.Counts)
		}
		rep, err := imported.Audit().Verify(ctx)
		must(t, err)
		if !rep.OK() {
			t.Errorf("export %d: the imported audit trail does not verify: %+v", i, rep.Problems)
		}
		if counts.Governed < last.Governed {
			t.Errorf("export %d holds %d governed sessions, the one before %d", i, counts.Governed, last.Governed)
		}
		last = counts
	}
	if last.Governed < 2 {
		t.Errorf("the writer wrote only %d governed sessions during the exports", last.Governed)
	}
}
