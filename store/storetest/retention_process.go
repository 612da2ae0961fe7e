package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func init() {
	// sweep: one sweep of the stored policies; args: batch rows, pause.
	// It reports the sessions and rows it removed.
	registerRole("sweep", func(ctx context.Context, st store.Store, args []string, out io.Writer) error {
		rows, _ := strconv.Atoi(args[0])
		pause, _ := time.ParseDuration(args[1])
		if err := report(out, "started"); err != nil {
			return err
		}
		if f, ok := out.(interface{ Flush() error }); ok {
			f.Flush()
		}
		rep, err := st.Retention().Sweep(ctx, store.SweepOptions{BatchRows: rows, Pause: pause})
		if err != nil {
			return err
		}
		k, _ := rep.Kind(store.PolicyConversationsIdle)
		return report(out, k)
	})
}

// RunRetentionProcesses checks sweeps in second OS processes: a sweep
// killed with SIGKILL leaves no session half removed and the next sweep
// finishes the work; two processes sweeping at once remove each session
// once, and their counts add up. n is the number of conversations (keep
// it small under the race detector).
func RunRetentionProcesses(t *testing.T, h Harness, n int) {
	t.Run("KilledSweep", func(t *testing.T) { testKilledSweep(t, newEnv(t, h), n) })
	t.Run("TwoProcesses", func(t *testing.T) { testTwoProcessSweeps(t, newEnv(t, h), n) })
}

// msgsPerConv is the messages of each conversation of the process tests.
const msgsPerConv = 5

// sweepFixture saves n conversations of msgsPerConv messages each, due
// under conversations_idle.
func (e *env) sweepFixture(n int) {
	e.t.Helper()
	for i := range n {
		id := fmt.Sprintf("p%04d", i)
		if _, err := e.conv().Save(e.ctx, store.Conversation{ID: id}); err != nil {
			e.t.Fatal(err)
		}
		msgs := make([]store.Message, msgsPerConv)
		for j := range msgs {
			msgs[j] = store.UserMessage(fmt.Sprint(id, "/", j))
		}
		e.appendMsgs(id, msgs...)
	}
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Minute})
	e.clock.Advance(time.Minute)
}

// remaining checks that every conversation left is whole and returns how
// many are left.
func (e *env) remaining() int {
	e.t.Helper()
	ids := e.listIDs(store.ConversationFilter{})
	for _, id := range ids {
		c, err := e.conv().Info(e.ctx, id)
		if err != nil {
			e.t.Fatalf("Info(%s): %v", id, err)
		}
		msgs, err := e.conv().Messages(e.ctx, id, 0, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if c.MessageCount != msgsPerConv || len(msgs) != msgsPerConv || msgs[0].Seq != 0 {
			e.t.Fatalf("conversation %s is not whole: count %d, %d messages", id, c.MessageCount, len(msgs))
		}
	}
	counts, err := e.st.(store.Counter).Counts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if counts.Conversations.Total != int64(len(ids)) || counts.Conversations.Messages != int64(len(ids)*msgsPerConv) {
		e.t.Fatalf("%d conversations listed, counts %+v", len(ids), counts.Conversations)
	}
	return len(ids)
}

func testKilledSweep(t *testing.T, e *env, n int) {
	e.sweepFixture(n)
	// Two conversations per batch, a pause between batches: the sweep
	// runs long enough to be killed in the middle.
	cmd, stdout := e.spawn("sweep", strconv.Itoa(2*(msgsPerConv+1)), "20ms")
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("the helper did not start")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := len(e.listIDs(store.ConversationFilter{}))
		if left < n-4 {
			break
		}
		if left == 0 || time.Now().After(deadline) {
			t.Fatalf("%d of %d left before the kill", left, n)
		}
		time.Sleep(5 * time.Millisecond) // polling another process, not waiting for expiry
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left := e.remaining()
	if left == 0 {
		t.Fatal("the sweep finished before the kill")
	}
	rep := e.sweep(store.SweepOptions{})
	k, _ := rep.Kind(store.PolicyConversationsIdle)
	if k.Sessions != int64(left) || e.remaining() != 0 {
		t.Fatalf("the next sweep removed %d of the %d left", k.Sessions, left)
	}
}

func testTwoProcessSweeps(t *testing.T, e *env, n int) {
	e.sweepFixture(n)
	var outs []*bufio.Scanner
	for range 2 {
		_, stdout := e.spawn("sweep", strconv.Itoa(msgsPerConv+1), "0s")
		outs = append(outs, bufio.NewScanner(stdout))
	}
	mine := e.sweep(store.SweepOptions{BatchRows: msgsPerConv + 1})
	k, _ := mine.Kind(store.PolicyConversationsIdle)
	total, rows := k.Sessions, k.Rows
	for i, sc := range outs {
		var got store.KindSweep
		for sc.Scan() {
			if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
				continue // the "started" line
			}
		}
		if got.Kind != store.PolicyConversationsIdle {
			t.Fatalf("helper %d reported %+v", i, got)
		}
		total += got.Sessions
		rows += got.Rows
	}
	if total != int64(n) || rows != int64(n*(msgsPerConv+1)) {
		t.Fatalf("three sweepers removed %d sessions, %d rows; want %d, %d", total, rows, n, n*(msgsPerConv+1))
	}
	if left := e.remaining(); left != 0 {
		t.Fatalf("%d left", left)
	}
}
