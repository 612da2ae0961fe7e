package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/keys"
)

// TestServeExportWithKeyFile: serve started with --key-file hands the
// console the keyring, so its export download writes the demo's encrypted
// sessions sealed (and names their keys); started without keys, the
// download of the same database fails rather than serve plaintext.
func TestServeExportWithKeyFile(t *testing.T) {
	db, kf := encryptedDemo(t)
	for _, withKeys := range []bool{true, false} {
		args := []string{"--db", db}
		if withKeys {
			args = append(args, "--key-file", kf)
		}
		args = append(args, "serve", "--addr", "127.0.0.1:0")
		addrc := make(chan string, 1)
		serveStarted = func(a string) { addrc <- a }
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			g := &globals{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, now: time.Now}
			done <- g.run(ctx, args)
		}()
		var base string
		select {
		case a := <-addrc:
			base = "http://" + a
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		case <-time.After(time.Minute):
			t.Fatal("serve did not start")
		}
		resp, err := http.Get(base + "/export")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		<-done
		serveStarted = nil
		if withKeys && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"data_key"`) || !strings.Contains(string(body), keys.Marker)) {
			t.Fatalf("export with --key-file: %d %.300s", resp.StatusCode, body)
		}
		if !withKeys && resp.StatusCode == http.StatusOK {
			t.Fatalf("export without keys: %d, want an error", resp.StatusCode)
		}
	}
}
