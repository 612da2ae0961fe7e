package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeRefusesAnOpenAddressWithoutCredentials(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--budget", "3").want(t, exitOK)
	r := e.run("serve", "--addr", "0.0.0.0:0")
	r.want(t, exitUsage)
	if !strings.Contains(r.stderr, "not a loopback address") {
		t.Errorf("stderr %q", r.stderr)
	}
	e.run("serve", "--addr", ":7777").want(t, exitUsage)
	e.run("serve", "--addr", "0.0.0.0:0", "--token", "short").want(t, exitUsage)
	e.run("serve", "--addr", "0.0.0.0:0", "--basic-auth", "nopassword").want(t, exitUsage)
	e.run("serve", "--addr", "no-port").want(t, exitUsage)
}

func TestServe(t *testing.T) { bothBackends(t, testServe) }

func testServe(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "agent-1", "--budget", "3", "--intent", "<script>x</script>").want(t, exitOK)
	e.run("create", "--id", "s2", "--agent", "agent-1", "--budget", "3", "--tool", "read_file").want(t, exitOK)
	e.run("use", "s2", "--tool", "read_file", "--request-id", "r1").want(t, exitOK)
	before := fileState(t, e.db)

	const token = "0123456789abcdef-token"
	addrc := make(chan string, 1)
	serveStarted = func(a string) { addrc <- a }
	defer func() { serveStarted = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		g := &globals{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, now: e.clock.Now}
		done <- g.run(ctx, []string{"--db", e.db, "serve", "--addr", "127.0.0.1:0", "--prefix", "/c", "--token", token, "--basic-auth", "ops:secret"})
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
	do := func(method, path string, auth func(*http.Request)) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		if auth != nil {
			auth(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	if code, body := do("GET", "/c/healthz", nil); code != 200 || body != "ok\n" {
		t.Errorf("healthz without credentials: %d %q", code, body)
	}
	for _, tc := range []struct {
		name string
		auth func(*http.Request)
		want int
	}{
		{"none", nil, 401},
		{"wrong token", bearer(token + "x"), 401},
		{"token prefix", bearer(token[:16]), 401},
		{"token", bearer(token), 200},
		{"basic", func(r *http.Request) { r.SetBasicAuth("ops", "secret") }, 200},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("ops", "secreT") }, 401},
		{"wrong user", func(r *http.Request) { r.SetBasicAuth("opz", "secret") }, 401},
	} {
		for _, p := range []string{"/c/", "/c/governed/s1", "/c/metrics"} {
			if code, _ := do("GET", p, tc.auth); code != tc.want {
				t.Errorf("%s: GET %s: %d, want %d", tc.name, p, code, tc.want)
			}
		}
	}
	code, body := do("GET", "/c/governed/s1", bearer(token))
	if code != 200 || !strings.Contains(body, "&lt;script&gt;x&lt;/script&gt;") || !strings.Contains(body, "agent-1") {
		t.Errorf("session page: %d %s", code, body)
	}
	if code, _ := do("POST", "/c/governed/s1", bearer(token)); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(out.String(), "/c/ (read-only") {
		t.Errorf("stdout %q", out.String())
	}
	sameFiles(t, before, fileState(t, e.db))
}
