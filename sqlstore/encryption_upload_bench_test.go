package sqlstore_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkEncryptionUpload measures an upload to an encrypted runtime
// session against one to a plaintext session in one run (a plain and an
// encrypted store side by side, alternating in every iteration; see
// BenchmarkEncryption), and a read of it back, for several sizes. Every
// upload is new content (no sharing by hash on either side).
//
//	go test -run '^$' -bench BenchmarkEncryptionUpload -benchtime 300x ./sqlstore
func BenchmarkEncryptionUpload(b *testing.B) {
	for _, size := range []int{4 << 10, 256 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("Put/size=%dKiB", size>>10), func(b *testing.B) {
			plain, enc := uploadPair(b)
			base := bytes.Repeat([]byte("upload content "), size/15+1)[:size]
			var tp, te time.Duration
			b.ResetTimer()
			for i := range b.N {
				content := append([]byte(strconv.Itoa(i)+":"), base...)
				for j := range 2 {
					j ^= i & 1 // alternate which goes first
					st := []*sqlstore.Store{plain, enc}[j]
					t0 := time.Now()
					_, err := st.Runtime().PutUpload(context.Background(), store.PutUploadRequest{SessionID: "rt",
						RefID: "r" + strconv.Itoa(i), WorkspacePath: "/w/f", Content: content})
					d := time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					if j == 0 {
						tp += d
					} else {
						te += d
					}
				}
			}
			report(b, tp, te)
		})
		b.Run(fmt.Sprintf("Read/size=%dKiB", size>>10), func(b *testing.B) {
			plain, enc := uploadPair(b)
			content := bytes.Repeat([]byte("upload content "), size/15+1)[:size]
			for _, st := range []*sqlstore.Store{plain, enc} {
				if _, err := st.Runtime().PutUpload(context.Background(), store.PutUploadRequest{SessionID: "rt",
					RefID: "r", WorkspacePath: "/w/f", Content: content}); err != nil {
					b.Fatal(err)
				}
			}
			var tp, te time.Duration
			b.ResetTimer()
			for i := range b.N {
				for j := range 2 {
					j ^= i & 1
					st := []*sqlstore.Store{plain, enc}[j]
					t0 := time.Now()
					_, got, err := st.Runtime().ReadUpload(context.Background(), "rt", "r")
					d := time.Since(t0)
					if err != nil || len(got) != size {
						b.Fatalf("%d bytes, %v", len(got), err)
					}
					if j == 0 {
						tp += d
					} else {
						te += d
					}
				}
			}
			report(b, tp, te)
		})
	}
}

// uploadPair is benchPair (synchronous=FULL, the default) with a runtime
// session "rt" in each store.
func uploadPair(b *testing.B) (plain, enc *sqlstore.Store) {
	b.Helper()
	plain, enc = benchPair(b, sqlstore.SyncFull)
	for _, st := range []*sqlstore.Store{plain, enc} {
		if _, err := st.Runtime().Insert(context.Background(), store.NewRuntimeSession{ID: "rt", AgentAlias: "a",
			ChatMode: store.ChatModeChat, WorkspaceDir: "/w"}); err != nil {
			b.Fatal(err)
		}
	}
	return plain, enc
}
