// Command sessionctl inspects, drives and maintains a session store
// database.
//
// Usage:
//
//	sessionctl [--db PATH] COMMAND [ARGS]
//
// Run "sessionctl help" for the list of commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// command is one subcommand: it parses its own flags from args and writes
// to the injected writers.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, g *globals, args []string) int
}

// globals holds the global flags and the injected output streams.
type globals struct {
	db     string
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"demo", "create a database, a governed session, and spend its budget", runDemo},
		{"bench", "measure the store on this disk (fsync rate, Use, get, list)", runBench},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("sessionctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultDB := os.Getenv("SESSIONCTL_DB")
	if defaultDB == "" {
		defaultDB = "sessions.db"
	}
	fs.StringVar(&g.db, "db", defaultDB, "database file (default $SESSIONCTL_DB, else ./sessions.db)")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		usage(fs)
		return exitUsage
	}
	name := fs.Arg(0)
	if name == "help" {
		usage(fs)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, g, fs.Args()[1:])
		}
	}
	fmt.Fprintf(stderr, "sessionctl: unknown command %q (see sessionctl help)\n", name)
	return exitUsage
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "Usage: sessionctl [--db PATH] COMMAND [ARGS]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nGlobal flags:")
	fs.PrintDefaults()
}
