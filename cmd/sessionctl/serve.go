package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// serveStarted, when set (tests), is told the address the console listens on.
var serveStarted func(addr string)

func runServe(ctx context.Context, g *globals, args []string) error {
	sp := specs.Serve
	fs := g.newFlags(sp)
	addr := fs.String("addr", "127.0.0.1:7777", "address to listen on, `HOST:PORT`; a non-loopback host needs --basic-auth or --token")
	prefix := fs.String("prefix", "", "path `PREFIX` to serve the console under, e.g. /console")
	// The defaults from the environment are read after parsing, so that
	// --help never prints a secret as a default.
	basic := fs.String("basic-auth", "", "require HTTP basic auth `USER:PASSWORD` (default $SESSIONCTL_BASIC_AUTH)")
	token := fs.String("token", "", "require the bearer token `TOKEN` (default $SESSIONCTL_TOKEN)")
	hide := fs.Bool("hide-content", false, "hide message bodies, tool inputs and state values until asked for")
	refresh := cliflags.DurationFlag(fs, "refresh", 5*time.Second, "live refresh interval of growing pages, `DURATION` (0 disables)")
	_, err := g.parseArgs(fs, sp, args, 0, 0)
	if err != nil {
		return err
	}
	if !cliflags.IsSet(fs, "basic-auth") {
		*basic = os.Getenv("SESSIONCTL_BASIC_AUTH")
	}
	if !cliflags.IsSet(fs, "token") {
		*token = os.Getenv("SESSIONCTL_TOKEN")
	}
	auth := console.Auth{Token: *token, Realm: "sessionctl console"}
	if *basic != "" {
		if auth.User, auth.Password, err = console.ParseBasicAuth(*basic); err != nil {
			return g.usageErr(sp.Name, "--basic-auth must be USER:PASSWORD")
		}
	}
	if *token != "" && len(*token) < 16 {
		return g.usageErr(sp.Name, "--token must be at least 16 characters")
	}
	loop, err := isLoopback(*addr)
	if err != nil {
		return g.usageErr(sp.Name, "%s", err)
	}
	if !loop && *basic == "" && *token == "" {
		return g.usageErr(sp.Name, "--addr %s is not a loopback address: give --basic-auth or --token", *addr)
	}
	if *refresh == 0 {
		*refresh = -1
	}
	if err := g.mustExist(ctx); err != nil {
		return g.fail(sp.Name, err)
	}
	st, err := g.openReadOnly(ctx)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	defer st.Close()
	if tr, ok := st.(store.Tenanter); ok && g.tenant != "" {
		// As every command that reads a tenant's rows: a mistyped name is
		// said to be unknown, not served as an empty console.
		if err := knownTenant(ctx, tr, g.tenant); err != nil {
			return g.fail(sp.Name, err)
		}
	}
	h, err := console.New(st, console.Options{Prefix: *prefix, ReadOnly: true, HideContent: *hide, Refresh: *refresh,
		Tenant: g.tenant, Clock: g.now, Keys: g.keyRing(), Logger: slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return g.usageErr(sp.Name, "%s", err)
	}
	p := strings.TrimRight(*prefix, "/")
	if *basic != "" || *token != "" {
		auth.Exempt = []string{p + "/healthz"}
		if h, err = console.RequireAuth(h, auth); err != nil {
			return g.usageErr(sp.Name, "%s", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle(p+"/", h)
	if p != "" {
		mux.Handle(p, h)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	fmt.Fprintf(g.stdout, "sessionctl serve: console of %s on http://%s%s/ (read-only; interrupt to stop)\n", g.dbName(), ln.Addr(), p)
	if f, ok := g.stdout.(*termout.Writer); ok {
		f.Flush()
	}
	if serveStarted != nil {
		serveStarted(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return g.fail(sp.Name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return g.fail(sp.Name, err)
	}
	return nil
}

// openReadOnly opens the store at --db read-only.
func (g *globals) openReadOnly(ctx context.Context) (store.Store, error) {
	var st store.Store
	var err error
	if g.isPG() {
		opts := []pgstore.Option{pgstore.WithReadOnly(true)}
		if g.now != nil {
			opts = append(opts, pgstore.WithClock(g.now))
		}
		opts = append(opts, g.pgKeyOptions()...) // keys.go
		st, err = pgstore.Open(ctx, g.db, opts...)
	} else {
		opts := []sqlstore.Option{sqlstore.WithReadOnly(true)}
		if g.now != nil {
			opts = append(opts, sqlstore.WithClock(g.now))
		}
		opts = append(opts, g.sqliteKeyOptions()...) // keys.go
		st, err = sqlstore.Open(ctx, g.db, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", g.dbName(), err)
	}
	return st, nil
}

// isLoopback reports whether addr's host is a loopback address (or
// "localhost"); an empty host listens everywhere and is not.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
