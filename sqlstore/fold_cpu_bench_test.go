package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkFoldCPU measures what the background search indexer costs per
// event it folds, in CPU time: b.N agent events are appended with no
// indexer running (not measured), then an indexer is started and the
// process's user and system time is taken from its start to the fold of
// the last event (fold-cpu-µs/event; fold-wall-µs/event beside it). The
// fold is one goroutine and nothing else runs, so the CPU figure is much
// less sensitive to the machine's load than a wall-clock one. At FULL and
// NORMAL, with the indexer's batch (DefaultIndexerBatch) and with batches
// of 8 and 256 (what a batch costs beside its events), on two corpora:
//
//   - runner: the four event shapes of the adapter's comparison
//     (adk/internal/benchkit.Event, as the adapter encodes them): a model
//     answer of ~800 bytes of repeated text, a thought and a function
//     call, a function response, a final answer;
//   - varied: one text part of ~1 KiB of words and numbers drawn at
//     random (about a thousand distinct trigrams per document, where the
//     repeated text has a few dozen).
//
// One command:
//
//	go test ./sqlstore -run '^$' -bench FoldCPU -benchtime 4000x
func BenchmarkFoldCPU(b *testing.B) {
	type variant struct {
		sync   Synchronous
		corpus string
		batch  int
	}
	var variants []variant
	for _, level := range []Synchronous{SyncFull, SyncNormal} {
		variants = append(variants, variant{level, "runner", 0}, variant{level, "varied", 0},
			variant{level, "runner", 8}, variant{level, "runner", 256})
	}
	for _, c := range variants {
		corpus := c.corpus
		batch := c.batch
		if batch == 0 {
			batch = sqlcore.DefaultIndexerBatch
		}
		name := "sync=" + string(c.sync) + "/" + corpus + "/batch=" + strconv.Itoa(batch)
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st, err := Open(ctx, filepath.Join(b.TempDir(), "f.db"), WithSynchronous(c.sync), WithBackgroundIndexer(false))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			as := st.AgentSessions()
			key := store.SessionKey{App: "a", User: "u", Session: "s"}
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for i := range b.N {
				data := runnerEventJSON(i)
				if corpus == "varied" {
					data = variedEventJSON(rng, i)
				}
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
					Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: data},
					Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(strconv.Itoa(i))}}}); err != nil {
					b.Fatal(err)
				}
			}
			var folded atomic.Int64
			done := make(chan struct{})
			b.ResetTimer()
			cpu0, t0 := benchCPU(), time.Now()
			ix := st.core.StartIndexer(sqlcore.IndexerConfig{Batch: c.batch, OnFold: func(n int64) {
				if folded.Add(n) >= int64(b.N) {
					select {
					case done <- struct{}{}:
					default:
					}
				}
			}})
			select {
			case <-done:
			case <-time.After(10 * time.Minute):
				b.Fatalf("folded %d of %d events", folded.Load(), b.N)
			}
			cpu, wall := benchCPU()-cpu0, time.Since(t0)
			b.StopTimer()
			ix.Stop()
			n := float64(b.N)
			b.ReportMetric(float64(cpu.Microseconds())/n, "fold-cpu-µs/event")
			b.ReportMetric(float64(wall.Microseconds())/n, "fold-wall-µs/event")
		})
	}
}

// benchCPU returns this process's user and system CPU time so far.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFoxText is the text of the comparison's model answers.
var benchFoxText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 18)

// runnerEventJSON returns the data of the i-th event of the comparison's
// conversation (adk/internal/benchkit.Event) as the ADK adapter stores it.
func runnerEventJSON(i int) []byte {
	usage := fmt.Sprintf(`"usageMetadata":{"candidatesTokenCount":60,"promptTokenCount":%d,"promptTokensDetails":[{"modality":"TEXT","tokenCount":%d}],"totalTokenCount":%d}`, 120+i, 120+i, 180+i)
	tail := fmt.Sprintf(`"id":"ev-%d","timestamp":"2026-11-28T07:56:17.970254747Z","invocationId":"inv-%d","author":"assistant"`, i, i/4)
	var s string
	switch i % 4 {
	case 0:
		s = `{"content":{"parts":[{"text":` + strconv.Quote(benchFoxText) + `}],"role":"model"},` + usage +
			`,"modelVersion":"gemini-2.5-flash","finishReason":"STOP",` + tail +
			fmt.Sprintf(`,"actions":{"stateDelta":{"progress":{"done":false,"step":%d},"topic":"foxes","turn":%d},"artifactDelta":{}}}`, i, i)
	case 1:
		s = fmt.Sprintf(`{"content":{"parts":[{"text":"I should look the weather up.","thought":true},{"functionCall":{"id":"call-%d","args":{"city":"Paris","days":3,"units":{"temp":"C"}},"name":"get_weather"},"thoughtSignature":"c2lnAP9zaWcA/3NpZwD/c2lnAP9zaWcA/3NpZwD/c2lnAP9zaWcA/w=="}],"role":"model"},`, i) +
			usage + `,"modelVersion":"gemini-2.5-flash",` + tail + `,"actions":{"stateDelta":{},"artifactDelta":{}}}`
	case 2:
		s = fmt.Sprintf(`{"content":{"parts":[{"functionResponse":{"id":"call-%d","name":"get_weather","response":{"result":{"forecast":["sun","rain","sun"],"high":21.5}}}}],"role":"user"},`, i-1) +
			tail + fmt.Sprintf(`,"actions":{"stateDelta":{"calls":%d,"last_tool":"get_weather"},"artifactDelta":{}}}`, i)
	default:
		s = `{"content":{"parts":[{"text":` + strconv.Quote(benchFoxText) + `}],"role":"model"},` + usage +
			`,"turnComplete":true,"finishReason":"STOP",` + tail + `,"actions":{"stateDelta":{},"artifactDelta":{}}}`
	}
	return []byte(s)
}

// variedEventJSON returns a model answer of ~1 KiB of words and numbers
// drawn with rng.
func variedEventJSON(rng *rand.Rand, i int) []byte {
	return []byte(fmt.Sprintf(`{"content":{"parts":[{"text":%s}],"role":"model"},"id":"ev-%d","invocationId":"inv-%d","author":"assistant","actions":{"stateDelta":{},"artifactDelta":{}}}`,
		strconv.Quote(benchWords(rng)), i, i))
}

// benchWords returns ~1 KiB of a runner's reply: words of a small
// vocabulary and, now and then, a number, drawn with rng.
func benchWords(rng *rand.Rand) string {
	words := strings.Fields(`the a model reply about task at hand we looked into broker queue partition consumer
		lag offset retry budget session agent tool call search index write fold commit page cache
		durable crash restart process file lock writer reader snapshot export import tenant key
		shred rotate policy sweep retention history fork rewind turn event state delta usage cost`)
	var sb strings.Builder
	for sb.Len() < 1000 {
		sb.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(9) == 0 {
			fmt.Fprintf(&sb, " %d", rng.IntN(100000))
		}
		sb.WriteByte(' ')
	}
	return sb.String()
}
