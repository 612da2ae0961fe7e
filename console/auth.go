package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// Auth are the credentials RequireAuth asks of every request: HTTP basic
// auth, a bearer token, or both (either one passes).
type Auth struct {
	// User and Password enable basic auth; both or neither.
	User, Password string
	// Token enables "Authorization: Bearer TOKEN"; at least 16
	// characters.
	Token string
	// Exempt are paths served without credentials (the console's
	// /healthz, for a load balancer's probe).
	Exempt []string
	// Realm names the protected space in the browser's prompt.
	Realm string
}

// RequireAuth wraps h so that every request must carry the credentials of
// a (except the paths of a.Exempt); others are answered 401 with a
// WWW-Authenticate challenge and nothing of h. Credentials are compared
// as SHA-256 digests in constant time, so neither the length nor a prefix
// of a secret leaks through timing. An Auth without basic auth or a
// token, or with a short token, is ErrInvalidInput: use h itself to serve
// without credentials.
func RequireAuth(h http.Handler, a Auth) (http.Handler, error) {
	if (a.User == "") != (a.Password == "") {
		return nil, store.Invalid("auth", "basic auth needs a user and a password")
	}
	if a.User == "" && a.Token == "" {
		return nil, store.Invalid("auth", "give basic auth, a token or both")
	}
	if a.Token != "" && len(a.Token) < 16 {
		return nil, store.Invalid("auth.token", "must be at least 16 characters")
	}
	if strings.ContainsAny(a.Realm, "\"\\\r\n") {
		return nil, store.Invalid("auth.realm", "must not contain quotes, backslashes or line breaks")
	}
	if a.Realm == "" {
		a.Realm = "sessionstore console"
	}
	c := &checker{basic: a.User != "", bearer: a.Token != "",
		user: sha256.Sum256([]byte(a.User)), pass: sha256.Sum256([]byte(a.Password)), token: sha256.Sum256([]byte(a.Token))}
	challenge := `Bearer realm="` + a.Realm + `"`
	if c.basic {
		challenge = `Basic realm="` + a.Realm + `", charset="UTF-8"`
	}
	exempt := map[string]bool{}
	for _, p := range a.Exempt {
		exempt[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt[r.URL.Path] || c.ok(r) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}), nil
}

// ParseBasicAuth splits "USER:PASSWORD" (as a flag or an environment
// variable gives it) into its parts.
func ParseBasicAuth(s string) (user, password string, err error) {
	u, p, ok := strings.Cut(s, ":")
	if !ok || u == "" || p == "" {
		return "", "", errors.New("basic auth must be USER:PASSWORD")
	}
	return u, p, nil
}

// checker holds the digests of the credentials.
type checker struct {
	basic, bearer     bool
	user, pass, token [32]byte
}

func (c *checker) ok(r *http.Request) bool {
	if c.bearer {
		if t, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
			d := sha256.Sum256([]byte(t))
			if subtle.ConstantTimeCompare(d[:], c.token[:]) == 1 {
				return true
			}
		}
	}
	if c.basic {
		if u, p, found := r.BasicAuth(); found {
			du, dp := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
			if subtle.ConstantTimeCompare(du[:], c.user[:])&subtle.ConstantTimeCompare(dp[:], c.pass[:]) == 1 {
				return true
			}
		}
	}
	return false
}
