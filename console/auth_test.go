package console_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

// TestRequireAuth: the wrapped handler is reached with the right basic
// auth or bearer token, or on an exempt path; anything else is 401 with a
// challenge and never reaches it; a bad Auth is ErrInvalidInput.
func TestRequireAuth(t *testing.T) {
	reached := 0
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ })
	h, err := console.RequireAuth(inner, console.Auth{User: "ada", Password: "s3cret", Token: "0123456789abcdef", Exempt: []string{"/healthz"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		path   string
		set    func(r *http.Request)
		status int
	}{
		{"no credentials", "/", func(*http.Request) {}, http.StatusUnauthorized},
		{"basic auth", "/", func(r *http.Request) { r.SetBasicAuth("ada", "s3cret") }, http.StatusOK},
		{"wrong password", "/", func(r *http.Request) { r.SetBasicAuth("ada", "s3cret!") }, http.StatusUnauthorized},
		{"wrong user", "/", func(r *http.Request) { r.SetBasicAuth("bob", "s3cret") }, http.StatusUnauthorized},
		{"token", "/x", func(r *http.Request) { r.Header.Set("Authorization", "Bearer 0123456789abcdef") }, http.StatusOK},
		{"token prefix", "/x", func(r *http.Request) { r.Header.Set("Authorization", "Bearer 0123456789abcde") }, http.StatusUnauthorized},
		{"exempt", "/healthz", func(*http.Request) {}, http.StatusOK},
	} {
		before := reached
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		c.set(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.status)
		}
		if got := reached > before; got != (c.status == http.StatusOK) {
			t.Errorf("%s: reached the handler: %v", c.name, got)
		}
		if c.status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no challenge", c.name)
		}
	}
	for name, a := range map[string]console.Auth{
		"nothing":       {},
		"user only":     {User: "ada"},
		"short token":   {Token: "short"},
		"quoted realm":  {Token: "0123456789abcdef", Realm: `a"b`},
		"password only": {Password: "x"},
	} {
		if _, err := console.RequireAuth(inner, a); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
}
