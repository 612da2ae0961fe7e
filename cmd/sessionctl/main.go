// Command sessionctl inspects, drives and maintains a session store
// database.
//
// Usage:
//
//	sessionctl [--db PATH] COMMAND [ARGS]
//
// Global flags (--db, --tenant, --version, --key-file, --keyring,
// --search-encrypted; one table, globalFlags) may stand anywhere on the line. The
// database is --db, else $SESSIONCTL_DB, else ./sessions.db: a SQLite
// file, or a postgres:// (postgresql://) URL for a PostgreSQL server, on
// which every command works except backup (use pg_dump). Read
// commands take --json for one JSON document with snake_case field names;
// otherwise they print aligned tables. Every command has --help with an
// example. Run "sessionctl help" for the list of commands and "sessionctl
// help exit" for the exit statuses.
//
// Exit statuses, the same for every command (one mapping, exit.go): 0
// success, 1 runtime error, 2 usage error (unknown flag, missing argument,
// invalid input), 3 not found, 4 agent mismatch, 5 closed, 6 expired, 7
// budget exceeded, 8 tool not authorized, 9 rate limited, 10 conflict, 11
// the database's schema is newer than this binary, 12 a spend limit, 13
// too many sessions, 14 not a session store, 15 storage failure, 16 busy,
// 17 a followed stream was rewritten. "sessionctl doctor" and "sessionctl
// audit verify" exit 1 when the database is unhealthy or an audit chain
// does not verify.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/cmd/sessionctl/suggest"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/sqlstore"
)

// command is one subcommand: it parses its own flags from args and writes
// to the injected writers of g. It returns an error, which the dispatcher
// (globals.report) prints and maps to the exit status.
type command struct {
	name    string
	group   string
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

// globals holds the global flags, the injected output streams and the
// clock (nil means time.Now; tests inject a fixed one).
type globals struct {
	db     string
	tenant string // --tenant: "" is the default tenant (tenant.go)
	// command is the name of the command running ("" before dispatch).
	command string
	// keyFile and keyring are --key-file and --keyring (keys.go).
	keyFile, keyring string
	// searchEncrypted is --search-encrypted: the store indexes the
	// plaintext of encrypted sessions (keys.go).
	searchEncrypted bool
	stdout          io.Writer
	stderr          io.Writer
	stdin           io.Reader
	now             func() time.Time
	// terminalStdin overrides whether stdin is a terminal (tests); nil
	// asks the file.
	terminalStdin *bool
	// terminalStdout and terminalStderr do the same for stdout and
	// stderr (progress.go).
	terminalStdout, terminalStderr *bool
	// progressEvery is the least time between two redraws of the status
	// line: 0 is progressEvery, below 0 redraws on every update (tests).
	progressEvery time.Duration
	// status is the running command's status line (nil: none).
	status *statusline.Line
	// buildInfo replaces debug.ReadBuildInfo (tests); nil reads the
	// binary's.
	buildInfo func() (*debug.BuildInfo, bool)
	// sqliteOptions are added to the options a SQLite store is opened
	// with (tests: short busy timeouts).
	sqliteOptions []sqlstore.Option
	// describing, when set, receives the spec and flag set of the command
	// run with --help, which prints nothing (describe).
	describing *cmdspec.Described
}

// globalFlag is a flag every command takes, anywhere on the line: the one
// table the parser, the help and completion read.
type globalFlag struct {
	name string
	arg  string // the value's name in help; "" for a switch
	env  string // the variable whose value is the default
	help string
}

// globalFlags are the global flags, in the order help lists them.
var globalFlags = []globalFlag{
	{"db", "PATH", "SESSIONCTL_DB", "database file (default $SESSIONCTL_DB, else ./sessions.db), or a postgres:// URL for PostgreSQL (the store's schema: the first of its search_path, public by default)"},
	{"tenant", "T", "SESSIONSTORE_TENANT", "work on the rows of tenant T (default $SESSIONSTORE_TENANT)"},
	{"version", "", "", "print the module, VCS, Go, SQLite and schema versions"},
	{"key-file", "FILE", "SESSIONSTORE_KEY_FILE", "key-encryption keys (default $SESSIONSTORE_KEY_FILE, or the keys in $SESSIONSTORE_KEY): encryption at rest (sessionctl keys)"},
	{"keyring", "DIR", "SESSIONSTORE_KEYRING", "the keyring (default <db>.keyring; PostgreSQL: $SESSIONSTORE_KEYRING)"},
	{"search-encrypted", "", "", "open the store with the search opt-in for encrypted sessions, as the application does (needs keys): writes and reindex then keep their search documents"},
}

// lookupGlobal returns the global flag called name.
func lookupGlobal(name string) (globalFlag, bool) {
	for _, f := range globalFlags {
		if f.name == name {
			return f, true
		}
	}
	return globalFlag{}, false
}

// isGlobal reports whether name is a global flag and whether it takes a
// value (cliflags.HoistGlobals).
func isGlobal(name string) (bool, bool) {
	f, ok := lookupGlobal(name)
	return ok, f.arg != ""
}

// globalFlagSet returns the parser of the global flags, bound to g (and
// version).
func (g *globals) globalFlagSet(version *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("sessionctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	strs := map[string]*string{"db": &g.db, "tenant": &g.tenant, "key-file": &g.keyFile, "keyring": &g.keyring}
	bools := map[string]*bool{"version": version, "search-encrypted": &g.searchEncrypted}
	for _, f := range globalFlags {
		if f.arg == "" {
			fs.BoolVar(bools[f.name], f.name, false, f.help)
			continue
		}
		def := os.Getenv(f.env)
		if def == "" && f.name == "db" {
			def = "sessions.db"
		}
		fs.StringVar(strs[f.name], f.name, def, f.help)
	}
	return fs
}

// Command groups, in the order help lists them.
const (
	groupInspect  = "Inspect"
	groupDrive    = "Drive sessions"
	groupMaintain = "Maintain"
)

func commands() []command {
	cmds := []command{
		{"list", groupInspect, "list sessions (filters, paging)", runList},
		{"show", groupInspect, "show every facet of one session", runShow},
		{"messages", groupInspect, "print a conversation's messages (ranges)", runMessages},
		{"artifacts", groupInspect, "list a conversation's artifacts", runArtifacts},
		{"traces", groupInspect, "list a conversation's trace events", runTraces},
		{"runs", groupInspect, "list a conversation's run records", runRuns},
		{"reports", groupInspect, "list a conversation's verification reports", runReports},
		{"uploads", groupInspect, "list a runtime session's uploads", runUploads},
		{"agents", groupInspect, "list, show, follow, delete agent sessions (app, user, session)", runAgents},
		{"history", groupInspect, "print the fork tree of an agent session or a conversation", runHistory},
		{"stats", groupInspect, "counts by status, sizes, schema version", runStats},
		{"tenants", groupInspect, "list the tenants with their counts", runTenants},
		{"audit", groupInspect, "list, verify, checkpoint or prune the audit trail", runAudit},
		{"search", groupInspect, "find items by what was said in them", runSearch},
		{"serve", groupInspect, "serve the read-only web console (HTTP)", runServe},

		{"create", groupDrive, "create a governed session and print its id", runCreate},
		{"use", groupDrive, "record tool calls against a governed session", runUse},
		{"close", groupDrive, "close governed sessions", runClose},
		{"close-agent", groupDrive, "close every active session of an agent", runCloseAgent},
		{"delete", groupDrive, "delete one conversation or runtime session with what it owns", runDelete},
		{"cleanup", groupDrive, "delete expired and closed governed sessions", runCleanup},
		{"reserve", groupDrive, "reserve tokens and money before a model call", runReserve},
		{"settle", groupDrive, "record a reservation's actual usage", runSettle},
		{"release", groupDrive, "give a reservation back unused", runRelease},
		{"limits", groupDrive, "show or set an agent's spend limits", runLimits},
		{"gc", groupDrive, "retention: old conversations, long histories", runGC},
		{"fork", groupDrive, "fork an agent session or a conversation (no copying)", runFork},
		{"rewind", groupDrive, "rewind an agent session or a conversation (reversible)", runRewind},
		{"sweep", groupDrive, "apply the retention policies (--dry-run: what they would remove)", runSweep},
		{"hold", groupDrive, "keep sessions whatever the retention policies say", runHold},

		{"retention", groupMaintain, "show or set the retention policies stored in the database", runRetention},
		{"migrate", groupMaintain, "show migration status or migrate up", runMigrate},
		{"doctor", groupMaintain, "check integrity, foreign keys, schema, WAL", runDoctor},
		{"backup", groupMaintain, "write a consistent copy of the database", runBackup},
		{"export", groupMaintain, "export sessions to JSON", runExport},
		{"import", groupMaintain, "import sessions from JSON files", runImport},
		{"keys", groupMaintain, "encryption at rest: keyring status, rotate the key-encryption key", runKeys},
		{"reindex", groupMaintain, "rebuild the search index (online, in batches) or --check it", runReindex},
		{"demo", groupMaintain, "create a database and show what the store does", runDemo},
		{"bench", groupMaintain, "measure the store on this disk (fsync rate, Use, get, list)", runBench},
		{"version", groupMaintain, "print the binary and schema versions", runVersion},
		{"completion", groupMaintain, "print a shell completion script (bash, zsh, fish)", runCompletion},
	}
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process (stdin is os.Stdin): it returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdin: os.Stdin, stdout: stdout, stderr: stderr}
	return g.run(ctx, args)
}

func (g *globals) run(ctx context.Context, args []string) int {
	// Human output escapes control characters (package termout); JSON and raw
	// content are written past it (rawWriter).
	if _, ok := g.stdout.(*termout.Writer); !ok {
		out := termout.NewWriter(g.stdout)
		g.stdout = out
		defer out.Flush()
	}
	if _, ok := g.stderr.(*termout.Writer); !ok {
		errw := termout.NewWriter(g.stderr)
		g.stderr = errw
		defer errw.Flush()
	}
	if len(args) > 0 && args[0] == "__complete" { // completion.go
		return g.runComplete(args[1:])
	}
	version := new(bool)
	fs := g.globalFlagSet(version)
	if err := fs.Parse(cliflags.HoistGlobals(args, isGlobal)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			g.usage(g.stdout)
			return exitOK
		}
		fmt.Fprintf(g.stderr, "sessionctl: %s (see sessionctl help)\n", clitext.ClipEchoes(cliflags.ErrText(err)))
		return exitUsage
	}
	if *version {
		return g.report("version", runVersion(ctx, g, nil)) // whatever else the line holds
	}
	if fs.NArg() == 0 {
		g.usage(g.stderr)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		return g.help(rest)
	}
	if g.db == "" {
		fmt.Fprintln(g.stderr, "sessionctl: --db must not be empty")
		return exitUsage
	}
	if err := g.checkKeys(ctx, name, rest); err != nil { // keys.go
		fmt.Fprintf(g.stderr, "sessionctl: %s\n", clitext.ClipEchoes(clitext.OneLine(err.Error())))
		return exitFor(err)
	}
	if c, ok := lookup(name); ok {
		if err := g.checkTenant(c.name); err != nil {
			fmt.Fprintf(g.stderr, "sessionctl: %s\n", clitext.ClipEchoes(err.Error()))
			return exitUsage
		}
		g.command = c.name
		return g.report(c.name, c.run(ctx, g, rest))
	}
	fmt.Fprintf(g.stderr, "sessionctl: %s (see sessionctl help)\n", clitext.ClipEchoes(fmt.Sprintf("unknown command %q%s", name, suggest.DidYouMean(name, commandNames()))))
	return exitUsage
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// help prints the overview, the exit statuses, or one command's help.
func (g *globals) help(args []string) int {
	if len(args) == 0 {
		g.usage(g.stdout)
		return exitOK
	}
	if args[0] == "exit" || args[0] == "exit-status" {
		printExitStatuses(g.stdout)
		return exitOK
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(g.stderr, "sessionctl help: %s\n", clitext.ClipEchoes(fmt.Sprintf("unknown command %q%s", args[0], suggest.DidYouMean(args[0], commandNames()))))
		return exitUsage
	}
	return g.report(c.name, c.run(context.Background(), g, []string{"--help"}))
}

func (g *globals) usage(w io.Writer) {
	fmt.Fprintln(w, "sessionctl inspects, drives and maintains a session store database.")
	fmt.Fprintln(w, "\nUsage: sessionctl [--db PATH] COMMAND [ARGS]")
	var group string
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		if c.group != group {
			group = c.group
			fmt.Fprintf(tw, "\n%s:\n", group)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nGlobal flags (anywhere on the line):")
	for _, f := range globalFlags {
		help := f.help
		if f.name == "tenant" {
			help += "; only " + tenantCommandList() + " take it"
		}
		left := strings.TrimSpace("--" + f.name + " " + f.arg)
		for i, line := range clitext.WrapWords(help, 58) {
			fmt.Fprintf(w, "  %-18s  %s\n", left, line)
			if i == 0 {
				left = ""
			}
		}
	}
	fmt.Fprintln(w, "\nRead commands take --json. \"sessionctl COMMAND --help\" shows a command's")
	fmt.Fprintln(w, "flags and an example; \"sessionctl help exit\" lists the exit statuses.")
	fmt.Fprintln(w, "\nExample:\n  sessionctl --db /tmp/demo.db demo && sessionctl --db /tmp/demo.db list")
}

// printExitStatuses documents every exit status, each meaning wrapped
// under itself within 80 columns.
func printExitStatuses(w io.Writer) {
	fmt.Fprintln(w, "Exit statuses:")
	for _, e := range exitTable {
		for i, line := range clitext.WrapWords(e.meaning, 80-6) {
			code := ""
			if i == 0 {
				code = strconv.Itoa(e.code)
			}
			fmt.Fprintf(w, "  %-4s%s\n", code, line)
		}
	}
}

// commandNames lists the commands and help, for suggestions.
func commandNames() []string {
	names := []string{"help"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}
