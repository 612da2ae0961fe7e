package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"text/tabwriter"
	"time"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// spec describes a command: its --help text, its actions and the values
// its flags and operands take. With the flag set the command builds (which
// parses the line and which --help prints), it is the one table that help,
// the parser and shell completion read (describe).
type spec struct {
	name     string   // command name
	args     string   // positional synopsis, e.g. "ID [ID...]"
	about    string   // what the command does (one paragraph or more)
	examples []string // at least one
	// actions are the actions of a command that has several (audit
	// verify, retention set, ...), the default first, and the flags each
	// takes: a flag given to an action that does not take it is a usage
	// error (checkActionFlags).
	actions []action
	// values are what completion offers: by flag ("--facet") the values a
	// flag takes one of, and by the operands before ("" for the first
	// operand, "set" for the one after the action set) the values of an
	// operand.
	values map[string][]string
}

// action is one action of a command and the flags it takes (their names
// without dashes).
type action struct {
	name  string
	flags []string
	// bare: the action is chosen without its word (hold FACET ID holds).
	bare bool
}

// action splits the action off args: the first word when it names one of
// sp's actions, else the bare action when args begins with an operand,
// else the default (the first).
func (sp spec) action(args []string) (string, []string) {
	for _, a := range sp.actions {
		if len(args) > 0 && !a.bare && a.name == args[0] {
			return a.name, args[1:]
		}
	}
	for _, a := range sp.actions {
		if a.bare && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			return a.name, args
		}
	}
	return sp.actions[0].name, args
}

// checkActionFlags fails with a usage error when a flag given on the
// command line (fs, parsed) is not one that action act of sp takes.
func (g *globals) checkActionFlags(fs *flag.FlagSet, sp spec, act string) error {
	i := slices.IndexFunc(sp.actions, func(a action) bool { return a.name == act })
	if i < 0 {
		return nil
	}
	bad := ""
	fs.Visit(func(f *flag.Flag) {
		if bad == "" && !slices.Contains(sp.actions[i].flags, f.Name) {
			bad = f.Name
		}
	})
	if bad != "" {
		return g.usageErr(sp.name, "--%s does not apply to %s %s", bad, sp.name, act)
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

// described is a command's spec and flag set, as describe reads them.
type described struct {
	sp spec
	fs *flag.FlagSet
}

// describe returns c's spec and flag set: it runs c with --help, which
// parses (nothing is printed, nothing opened) and stops there.
func describe(c command) described {
	var d described
	g := &globals{stdout: io.Discard, stderr: io.Discard, describing: &d}
	c.run(context.Background(), g, []string{"--help"})
	return d
}

// newFlags returns the flag set of a command. Errors are reported by parse,
// in one line, so the flag package's own output is discarded.
func (g *globals) newFlags(sp spec) *flag.FlagSet {
	fs := flag.NewFlagSet(sp.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args, allowing flags after positional arguments ("show ID
// --json"); "--" ends the flags. It returns the positional arguments, or an
// error when the command must stop: errHelp when help was asked for and
// printed (exit 0), a usage error for a bad flag (exit 2).
func (g *globals) parse(fs *flag.FlagSet, sp spec, args []string) (pos []string, err error) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) && g.describing != nil {
			*g.describing = described{sp, fs}
			return nil, errHelp
		}
		if errors.Is(err, flag.ErrHelp) {
			g.printHelp(fs, sp)
			return nil, errHelp
		}
		if err != nil {
			return nil, g.usageErr(sp.name, "%s", flagSuggestion(fs, err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
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

// isSet reports whether the flag called name was given on the command
// line (a flag given with its default value counts).
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// flagErr rewrites the flag package's messages with double dashes, the
// spelling the help uses.
func flagErr(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		return "invalid value " + strings.Replace(rest, " for flag -", " for flag --", 1)
	}
	return msg
}

// printHelp writes a command's help to stdout: synopsis, description,
// flags with double dashes, examples.
func (g *globals) printHelp(fs *flag.FlagSet, sp spec) {
	w := g.stdout
	synopsis := "sessionctl [--db PATH] " + sp.name
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		synopsis += " [flags]"
	}
	if sp.args != "" {
		synopsis += " " + sp.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, strings.TrimSpace(sp.about))
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fs.VisitAll(func(f *flag.Flag) {
			argName, usage := flag.UnquoteUsage(f)
			if _, ok := f.Value.(*durationValue); ok && argName == "value" {
				argName = "duration"
			}
			left := "--" + f.Name
			if argName != "" {
				left += " " + argName
			}
			if !strings.Contains(usage, "(required)") && f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", left, usage)
		})
		tw.Flush()
	}
	// The global flags it takes, from their table (--tenant only where
	// it applies).
	var globalNames []string
	for _, f := range globalFlags {
		if f.name != "tenant" || slices.Contains(tenantCommands, sp.name) {
			globalNames = append(globalNames, "--"+f.name)
		}
	}
	fmt.Fprintf(w, "\n%s\n", wrapText("Global flags: "+strings.Join(globalNames, ", ")+" (see sessionctl help)"))
	fmt.Fprintln(w, "\nExample:")
	for _, e := range sp.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
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
	g.status.clear() // whatever path the command returned by
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
		fmt.Fprintf(g.stderr, "sessionctl %s: %s (see sessionctl %s --help)\n", ue.name, clipEchoes(ue.msg), cmd)
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
	g.status.clear()
	fmt.Fprintf(g.stderr, "sessionctl %s: %s%s\n", name, g.errorText(err), g.keyDetail(err)) // keys.go, units.go
	return exitFor(err)
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// wantArgs checks the number of positional arguments (a usage error
// when it is wrong).
func (g *globals) wantArgs(sp spec, pos []string, min, max int) error {
	switch {
	case len(pos) < min && min == 1:
		return g.usageErr(sp.name, "missing %s", strings.Fields(sp.args)[0])
	case len(pos) < min:
		return g.usageErr(sp.name, "expected %s", sp.args)
	case max >= 0 && len(pos) > max:
		return g.usageErr(sp.name, "unexpected argument %q", pos[max])
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
		return "", g.usageErr(sp.name, "%v", err)
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
		return "", nil, g.fail(sp.name, err)
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

// writeJSON writes v as one indented JSON document, unescaped (see
// rawWriter).
func writeJSON(w io.Writer, v any) error { return encodeJSON(rawWriter(w), v, "  ") }

// encodeJSON writes v as one JSON document, indented by indent ("": on
// one line), with <, > and & as the characters they are: encoding/json
// escapes them for HTML (\u003c) in stored JSON too, a message's text or
// a tool's input, which a reader must see as it was written.
func encodeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(humanize.JSONChars(buf.Bytes()))
	return err
}

// newTable returns a tabwriter for aligned columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// jsonTime formats t for JSON output ("" for the zero time): RFC 3339 in
// UTC with as many fraction digits as needed, the encoding of time.Time
// values in the store's own types.
func jsonTime(t time.Time) string { return humanize.Time(t) }

// tableTime formats t for tables: UTC, seconds.
func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// parseJSONTime parses a time written by jsonTime (any RFC 3339 time).
func parseJSONTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: not an RFC 3339 time: %q", field, s)
	}
	return t.UTC(), nil
}

// durationPrecision is the precision with which the store keeps durations
// (time limits, rate windows) and times: whole milliseconds. A duration
// flag that is not a whole number of it is refused, never rounded.
const durationPrecision = time.Millisecond

// checkDuration refuses a duration flag the store would change: below
// least, or not a whole number of durationPrecision. The message names the
// smallest allowed value.
func checkDuration(flagName string, d, least time.Duration) error {
	switch {
	case d < least:
		return fmt.Errorf("--%s %s is below the smallest allowed value, %s", flagName, d, least)
	case d%durationPrecision != 0:
		return fmt.Errorf("--%s %s is not a whole number of milliseconds, the precision the store keeps (the smallest allowed value is %s)", flagName, d, least)
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set appends s.
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// nameList is a repeatable flag of tool or credential names, which may also
// be given comma-separated ("--tool read,write"): names cannot hold commas.
// Names are kept verbatim: "read_file " is not "read_file" (the store
// refuses it), so the call counted is always the one asked for.
type nameList []string

func (l *nameList) String() string { return strings.Join(*l, ",") }

// Set appends the comma-separated names of s, as they are.
func (l *nameList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v == "" {
			return errors.New("empty name")
		}
		*l = append(*l, v)
	}
	return nil
}

// humanBytes formats a byte count: "512 B", "1.5 KiB", "12.0 MiB".
func humanBytes(n int64) string { return humanize.Bytes(n) }

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

// durationValue is the flag.Value of every duration flag: it reads what
// humanize.ParseDuration reads ("30d", "12h", "1h30m", "90s") and refuses
// a negative duration (none of sessionctl's has a meaning); help shows its
// default as it is typed ("1h", not Go's "1h0m0s").
type durationValue time.Duration

func (d *durationValue) String() string { return humanize.Short(time.Duration(*d)) }

// Set parses s.
func (d *durationValue) Set(s string) error {
	v, err := humanize.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("a negative duration is refused (give " + humanize.DurationExample + ")")
	}
	*d = durationValue(v)
	return nil
}

// durationFlag defines a duration flag of fs (durationValue) with its
// default and returns where its value is kept.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, value, usage)
	return p
}

// durationVar is durationFlag keeping the value in *p.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// listing is what a listing command prints: with --json its document;
// else a line saying there is none, or a header and one row an item as an
// aligned table, then (on stderr) how to read the next page.
type listing[T any] struct {
	doc    any            // the --json document
	items  []T            // the rows
	none   string         // the line printed when there are no items
	header string         // the column names, tab-separated
	row    func(T) string // an item's cells, tab-separated (lines under it may follow)
	more   string         // "more sessions follow", said when next is set
	next   string         // the cursor of the next page (quoted for a shell)
}

// printListing prints l, as JSON when asJSON.
func printListing[T any](g *globals, asJSON bool, l listing[T]) error {
	if asJSON {
		return writeJSON(g.stdout, l.doc)
	}
	if len(l.items) == 0 {
		_, err := fmt.Fprintln(g.stdout, l.none)
		return err
	}
	tw := newTable(g.stdout)
	fmt.Fprintln(tw, l.header)
	for _, it := range l.items {
		fmt.Fprintln(tw, l.row(it))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.next != "" {
		fmt.Fprintf(g.stderr, "%s: add --after %s for the next page\n", l.more, shellQuote(l.next))
	}
	return nil
}

// same is a listing's row of a row already written.
func same(row string) string { return row }

// say prints a command's outcome: doc as one JSON document with --json,
// else the line format makes of args; a failure to write is returned.
func (g *globals) say(asJSON bool, doc any, format string, args ...any) error {
	if asJSON {
		return writeJSON(g.stdout, doc)
	}
	_, err := fmt.Fprintf(g.stdout, format, args...)
	return err
}
