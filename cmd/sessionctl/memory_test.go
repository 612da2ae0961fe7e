package main

// Bounded memory (issue 15): export, import, backup and gc stream, so that
// their peak resident memory stays under 64 MiB whatever the size of the
// database. Opt-in, because it builds a database of a few hundred MiB:
//
//	SESSIONCTL_MEMTEST=1 go test ./cmd/sessionctl -run TestStreamingMemory -v -timeout 30m
//
// SESSIONCTL_MEMTEST_MB sets the size of the database to build (default
// 220); SESSIONCTL_MEMTEST_DIR keeps the database and the export file in
// that directory, to measure other binaries on them. The test runs the built sessionctl binary under GNU time
// (/usr/bin/time -f %M: the kernel's peak RSS of the finished process).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// maxRSS is the bound of issue 15.
const maxRSS = 64 << 20

// bigDatabase fills the env's database to at least mb MiB: conversations
// of 40 messages of about 1 KiB, runtime sessions with 200 KiB uploads,
// agent sessions with 40 events, governed sessions with their spend
// limits and reservations; written in
// transactions of a few MiB through the restore API.
func (e *testEnv) bigDatabase(mb int) {
	e.t.Helper()
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	para := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 18) // ~1 KiB
	now := e.clock.Now()
	for batch := 0; fileSize(e.db) < int64(mb)<<20; batch++ { // the WAL is checkpointed into it as it grows
		err := st.RestoreRecords(ctx, func(w store.RecordWriter) error {
			for i := range 100 {
				id := fmt.Sprintf("b%04d-%03d", batch, i)
				c := store.NewConversation(id)
				c.CreatedAt, c.UpdatedAt = now, now
				for j := range 40 {
					m := store.UserMessage(fmt.Sprintf("%d %s", j, para))
					m.CreatedAt = now
					c.Messages = append(c.Messages, m)
				}
				if _, err := w.PutConversation(store.ConversationRecord{Conversation: c}); err != nil {
					return err
				}
				if _, err := w.PutGovernedSession(store.Session{ID: id, AgentID: "a", DelegationChain: []string{},
					AuthorizedTools: []string{"t"}, AuthorizedCredentials: []string{}, TimeLimit: time.Hour, CallBudget: 5,
					RateWindow: time.Minute, RateWindowStart: now, Sensitivity: store.SensitivityInternal,
					Status: store.StatusActive, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					return err
				}
				// Its spend state: a cost limit and 20 settled reservations
				// (so that the spend section is tens of thousands of records).
				if _, err := w.PutSpendLimit(store.SpendLimitRecord{ID: "l-" + id, AgentID: "a", SessionID: id,
					SpendLimit:  store.SpendLimit{Metric: store.MetricCost, Window: store.WindowLifetime, Limit: 1 << 40, Currency: "USD"},
					WindowStart: time.Unix(0, 0), Spent: 20 * 250}); err != nil {
					return err
				}
				for j := range 20 {
					amount := store.SpendAmount{InputTokens: 100, OutputTokens: 50, CostMicros: 300}
					if _, err := w.PutReservation(store.ReservationRecord{Reservation: store.Reservation{SessionID: id,
						ID: fmt.Sprintf("request-%02d", j), AgentID: "a", Status: store.ReservationSettled, Amount: amount, Currency: "USD",
						Actual: store.SpendAmount{InputTokens: 90, OutputTokens: 40, CostMicros: 250}, CreatedAt: now,
						ExpiresAt: now.Add(time.Minute), ClosedAt: now}, Holds: []store.SpendHold{}}); err != nil {
						return err
					}
				}
				if i%10 == 0 {
					content := []byte(strings.Repeat(id+" ", 200<<10/len(id+" ")))
					if _, err := w.PutRuntimeSession(store.RuntimeRecord{
						Session: store.RuntimeSession{ID: id, AgentAlias: "al", WorkspaceDir: "/w", ChatMode: store.ChatModeChat, CreatedAt: now, LastActive: now},
						Uploads: []store.UploadRecord{{Upload: store.Upload{RefID: "f", Marker: "[f]", WorkspacePath: "/w/f", CreatedAt: now}, Content: content}},
					}); err != nil {
						return err
					}
				}
				if i%4 == 0 {
					s := store.AgentSession{Key: store.SessionKey{App: "app", User: fmt.Sprintf("u%d", i%7), Session: id},
						Version: 41, EventCount: 40, CreatedAt: now, UpdatedAt: now,
						State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}}}
					for j := range 40 {
						data, _ := json.Marshal(map[string]string{"text": para})
						s.Events = append(s.Events, store.AgentEvent{Seq: int64(j + 1), ID: fmt.Sprintf("e%d", j), Timestamp: now, Data: data})
					}
					if _, err := w.PutAgentSession(s); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// peakRSS runs the binary under GNU time and returns the process's peak
// resident memory. (The rusage of a child of this process would not do:
// Go starts children with vfork, so their peak includes this test
// process's memory until they exec.)
func peakRSS(t *testing.T, bin string, args ...string) int64 {
	t.Helper()
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		t.Skip("no /usr/bin/time (GNU time) to measure peak RSS with")
	}
	out := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command(timeBin, append([]string{"-o", out, "-f", "%M", bin}, args...)...)
	cmd.Env = append(os.Environ(), "SESSIONCTL_DB=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sessionctl %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("GNU time wrote %q", b)
	}
	return kib << 10
}

func TestStreamingMemory(t *testing.T) {
	t.Parallel()
	if os.Getenv("SESSIONCTL_MEMTEST") == "" {
		t.Skip("opt-in: SESSIONCTL_MEMTEST=1 (builds a database of a few hundred MiB)")
	}
	mb := 220
	if s := os.Getenv("SESSIONCTL_MEMTEST_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildBinary(t)
	e := newTestEnv(t)
	if dir := os.Getenv("SESSIONCTL_MEMTEST_DIR"); dir != "" {
		e.dir, e.db = dir, filepath.Join(dir, "big.db")
	}
	start := time.Now()
	e.bigDatabase(mb)
	e.run("cleanup").want(t, 0) // checkpoint the WAL into the file
	t.Logf("database: %s in %s", humanize.Bytes(fileSize(e.db)), time.Since(start).Round(time.Second))
	if fileSize(e.db) < 200<<20 && mb >= 200 {
		t.Fatalf("the database is %s, want at least 200 MiB", humanize.Bytes(fileSize(e.db)))
	}
	file := filepath.Join(e.dir, "all.json")
	copyDB := filepath.Join(e.dir, "imported.db")
	backup := filepath.Join(e.dir, "backup.db")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"export", []string{"--db", e.db, "export", "--output", file}},
		{"import", []string{"--db", copyDB, "import", file}},
		{"backup", []string{"--db", e.db, "backup", backup}},
		{"gc", []string{"--db", copyDB, "gc", "--keep-last", "10"}},
		{"gc --older-than", []string{"--db", copyDB, "gc", "--older-than", "1ms"}},
	} {
		t0 := time.Now()
		rss := peakRSS(t, bin, c.args...)
		t.Logf("%-16s peak RSS %s in %s (export file %s)", c.name, humanize.Bytes(rss), time.Since(t0).Round(time.Millisecond), humanize.Bytes(fileSize(file)))
		if rss > maxRSS {
			t.Errorf("%s: peak RSS %s, over %s", c.name, humanize.Bytes(rss), humanize.Bytes(maxRSS))
		}
	}
}
