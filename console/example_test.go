package console_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/sqlstore"
)

// Mount the console under /console in your own mux, on a store opened
// read-only (the database refuses writes, whatever the console does).
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "console-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sessions.db")
	if w, err := sqlstore.Open(ctx, path); err == nil { // an existing store, in real use
		w.Close()
	}

	st, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	h, err := console.New(st, console.Options{Prefix: "/console", ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", h)
	// http.ListenAndServe("127.0.0.1:7777", mux) in a real program.

	for _, path := range []string{"/console/", "/console/governed?format=json", "/console/healthz"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("Content-Type"))
	}
	// Output:
	// /console/ 200 text/html; charset=utf-8
	// /console/governed?format=json 200 application/json
	// /console/healthz 200 text/plain; charset=utf-8
}
