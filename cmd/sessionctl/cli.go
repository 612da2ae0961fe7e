package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/store"
)

// spec is a command's description (package cmdspec; each command's is in
// package specs): the table that help, the parser and shell completion
// read (describe).
type spec = cmdspec.Spec

// checkActionFlags fails with a usage error when a flag given on the
// command line (fs, parsed) is not one that action act of sp takes.
func (g *globals) checkActionFlags(fs *flag.FlagSet, sp spec, act string) error {
	if bad := sp.BadFlag(fs, act); bad != "" {
		return g.usageErr(sp.Name, "--%s does not apply to %s %s", bad, sp.Name, act)
	}
	return nil
}

// parseAction is parse, then checkActionFlags for action act.
func (g *globals) parseAction(fs *flag.FlagSet, sp spec, act string, args []string) ([]string, error) {
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return nil, err
	}
	return pos, g.checkActionFlags(fs, sp, act)
}

// describe returns c's spec and flag set: it runs c with --help, which
// parses (nothing is printed, nothing opened) and stops there.
func describe(c command) cmdspec.Described {
	var d cmdspec.Described
	g := &globals{stdout: io.Discard, stderr: io.Discard, describing: &d}
	c.run(context.Background(), g, []string{"--help"})
	return d
}

// newFlags returns the flag set of a command. Errors are reported by parse,
// in one line, so the flag package's own output is discarded.
func (g *globals) newFlags(sp spec) *flag.FlagSet {
	fs := flag.NewFlagSet(sp.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args, allowing flags after positional arguments ("show ID
// --json"); "--" ends the flags. It returns the positional arguments, or an
// error when the command must stop: errHelp when help was asked for and
// printed (exit 0), a usage error for a bad flag (exit 2).
func (g *globals) parse(fs *flag.FlagSet, sp spec, args []string) ([]string, error) {
	pos, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp) && g.describing != nil:
		*g.describing = cmdspec.Described{Spec: sp, Flags: fs}
		return nil, errHelp
	case errors.Is(err, flag.ErrHelp):
		g.printHelp(fs, sp)
		return nil, errHelp
	case err != nil:
		return nil, g.usageErr(sp.Name, "%s", cliflags.ErrTextSuggesting(fs, err))
	}
	return pos, nil
}

// parseArgs is parse, then wantArgs: the command takes min to max
// operands (max -1: any number).
func (g *globals) parseArgs(fs *flag.FlagSet, sp spec, args []string, min, max int) ([]string, error) {
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return nil, err
	}
	return pos, g.wantArgs(sp, pos, min, max)
}

// printHelp writes a command's help to stdout (cmdspec.WriteHelp) with
// the global flags it takes, from their table (--tenant only where it
// applies).
func (g *globals) printHelp(fs *flag.FlagSet, sp spec) {
	var globalNames []string
	for _, f := range globalFlags {
		if f.name != "tenant" || slices.Contains(tenantCommands, sp.Name) {
			globalNames = append(globalNames, "--"+f.name)
		}
	}
	cmdspec.WriteHelp(g.stdout, fs, sp, globalNames)
}

// usageErr returns a usage error of command name (printed by report as
// one line with a pointer to the command's help; exit status 2).
func (g *globals) usageErr(name, format string, args ...any) error {
	return &helpUsageError{name: name, msg: fmt.Sprintf(format, args...)}
}

// fail returns err to be reported under name ("sessionctl NAME: msg"),
// for the commands whose errors are not reported under the command's own
// name (agents list, audit verify, ...); report prints it and maps it to
// its exit status.
func (g *globals) fail(name string, err error) error {
	return &cmdError{name: name, err: err}
}

// result is fail for an err that may be nil (success); an error already
// reported under a name keeps it.
func (g *globals) result(name string, err error) error {
	var named *cmdError
	if err == nil || errors.As(err, &named) {
		return err
	}
	return g.fail(name, err)
}

// withStore opens the existing store, runs f on it and closes it.
func (g *globals) withStore(ctx context.Context, f func(st cliStore) error) error {
	st, err := g.openExisting(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

// report is the one place that prints a command's error and maps it to
// the exit status: nothing for success or help (0) or for an exitStatus
// (the command printed its own lines); "sessionctl NAME: msg (see
// sessionctl NAME --help)" for a usage error (2); else "sessionctl NAME:
// msg" and the status of exitFor. name is the command's name, used when
// err does not carry one.
func (g *globals) report(name string, err error) int {
	g.status.Clear() // whatever path the command returned by
	if err == nil || errors.Is(err, errHelp) {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var ue *helpUsageError
	if errors.As(err, &ue) {
		// The help is the command's (hold, not "hold release").
		cmd, _, _ := strings.Cut(ue.name, " ")
		fmt.Fprintf(g.stderr, "sessionctl %s: %s (see sessionctl %s --help)\n", ue.name, clitext.ClipEchoes(ue.msg), cmd)
		return exitUsage
	}
	var ce *cmdError
	if errors.As(err, &ce) {
		name = ce.name
	}
	return g.reportItem(name, err)
}

// reportItem prints the error of one item of a command that goes on with
// the next (close ID...), as report would, and returns its exit status.
func (g *globals) reportItem(name string, err error) int {
	g.status.Clear()
	fmt.Fprintf(g.stderr, "sessionctl %s: %s%s\n", name, g.errorText(err), g.keyDetail(err)) // keys.go, units.go
	return exitFor(err)
}

// wantArgs checks the number of positional arguments (a usage error
// when it is wrong).
func (g *globals) wantArgs(sp spec, pos []string, min, max int) error {
	switch {
	case len(pos) < min && min == 1:
		return g.usageErr(sp.Name, "missing %s", strings.Fields(sp.Args)[0])
	case len(pos) < min:
		return g.usageErr(sp.Name, "expected %s", sp.Args)
	case max >= 0 && len(pos) > max:
		return g.usageErr(sp.Name, "unexpected argument %q", pos[max])
	}
	return nil
}

// parseID parses the flags of a command whose one positional argument is an
// id (field names it in the error), checks the id, and returns it.
func (g *globals) parseID(fs *flag.FlagSet, sp spec, args []string, field string) (string, error) {
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return "", err
	}
	if err := g.wantArgs(sp, pos, 1, 1); err != nil {
		return "", err
	}
	if err := store.ValidateID(field, pos[0]); err != nil {
		return "", g.usageErr(sp.Name, "%v", err)
	}
	return pos[0], nil
}

// openForID is parseID, then opens the existing store; the caller closes
// it.
func (g *globals) openForID(ctx context.Context, fs *flag.FlagSet, sp spec, args []string, field string) (string, cliStore, error) {
	id, err := g.parseID(fs, sp, args, field)
	if err != nil {
		return "", nil, err
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return "", nil, g.fail(sp.Name, err)
	}
	return id, st, nil
}

// errNoDatabase says that the database file does not exist; read and
// maintenance commands never create it.
type errNoDatabase struct {
	path string
	dir  string // the missing directory, when the file's directory is missing
}

func (e *errNoDatabase) Error() string {
	if e.dir != "" {
		return fmt.Sprintf("database file %s does not exist: the directory %s does not exist", e.path, e.dir)
	}
	return fmt.Sprintf("database file %s does not exist (create one with sessionctl create, import or demo)", e.path)
}

// mustExistFile checks that the database file exists without creating it.
func (g *globals) mustExistFile() error {
	fi, err := os.Stat(g.db)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		e := &errNoDatabase{path: g.db}
		if dfi, derr := os.Stat(filepath.Dir(g.db)); derr != nil || !dfi.IsDir() {
			e.dir = filepath.Dir(g.db)
		}
		return e
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a database file", g.db)
	}
	return nil
}

// clock returns the current time of this invocation.
func (g *globals) clock() time.Time {
	if g.now != nil {
		return g.now().UTC()
	}
	return time.Now().UTC()
}

// fileSize returns the size of path, 0 when it does not exist.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// withID names the session in a not-found error ("session x: session not
// found"); other errors, and a not-found that names what is missing
// itself (*missingError), pass unchanged.
func withID(id string, err error) error {
	var named *missingError
	if errors.Is(err, store.ErrNotFound) && !errors.As(err, &named) {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return err
}

// missingError is a not-found error whose text says what is missing
// (e.g. "run r of conversation c not found"); it matches
// store.ErrNotFound.
type missingError struct{ what string }

func (e *missingError) Error() string { return e.what + " not found" }

// Unwrap makes errors.Is(err, store.ErrNotFound) true.
func (e *missingError) Unwrap() error { return store.ErrNotFound }

// say prints a command's outcome: doc as one JSON document with --json,
// else the line format makes of args; a failure to write is returned.
func (g *globals) say(asJSON bool, doc any, format string, args ...any) error {
	if asJSON {
		return jsonout.Write(g.stdout, doc)
	}
	_, err := fmt.Fprintf(g.stdout, format, args...)
	return err
}

// errorText is the text of a command's error for its error line: a file
// or schema that is not a session store said so in the words of the
// user's --db, its echoes cut to a readable length.
func (g *globals) errorText(err error) string {
	if errors.Is(err, store.ErrNotSessionStore) {
		return clitext.ClipEchoes(g.dbName() + " is not a session store database (check --db)")
	}
	return clitext.ClipEchoes(clitext.OneLine(err.Error()))
}
