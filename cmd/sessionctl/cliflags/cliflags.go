// Package cliflags holds the flag machinery of sessionctl on top of the
// standard flag package: parsing with flags after operands, flag errors
// in the double-dash spelling the help uses, the global flags anywhere on
// the line, and the flag values every command shares (repeatable lists,
// durations as people write them).
package cliflags

import (
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/suggest"
	"github.com/agentstore/sessionstore/humanize"
)

// Parse parses args with fs, allowing flags after positional arguments
// ("show ID --json"); "--" ends the flags. It returns the positional
// arguments, or the flag package's error (flag.ErrHelp for --help).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
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

// IsSet reports whether the flag called name was given on the command
// line (a flag given with its default value counts).
func IsSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// ErrText rewrites the flag package's messages with double dashes, the
// spelling the help uses.
func ErrText(err error) string {
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

// ErrTextSuggesting is ErrText, with a suggestion added to the message
// of an unknown flag of fs.
func ErrTextSuggesting(fs *flag.FlagSet, err error) string {
	msg := ErrText(err)
	name, ok := strings.CutPrefix(msg, "unknown flag --")
	if !ok {
		return msg
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := suggest.Closest(name, names); c != "" {
		return msg + " (did you mean --" + c + "?)"
	}
	return msg
}

// HoistGlobals moves the global flags (--db PATH, --db=PATH, --version)
// found after the command name to the front of args, so that
// "sessionctl list --db x.db" works as "sessionctl --db x.db list".
// Arguments after "--" are left alone. global reports whether name is a
// global flag and whether it takes a value.
func HoistGlobals(args []string, global func(name string) (isGlobal, takesValue bool)) []string {
	var globals, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		ok, takesValue := global(name)
		if !ok {
			rest = append(rest, a)
			continue
		}
		globals = append(globals, a)
		if takesValue && !hasValue && i+1 < len(args) {
			globals = append(globals, args[i+1])
			i++
		}
	}
	return append(globals, rest...)
}

// StringList is a repeatable string flag.
type StringList []string

func (l *StringList) String() string { return strings.Join(*l, ",") }

// Set appends s.
func (l *StringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// NameList is a repeatable flag of tool or credential names, which may
// also be given comma-separated ("--tool read,write"): names cannot hold
// commas. Names are kept verbatim: "read_file " is not "read_file" (the
// store refuses it), so the call counted is always the one asked for.
type NameList []string

func (l *NameList) String() string { return strings.Join(*l, ",") }

// Set appends the comma-separated names of s, as they are.
func (l *NameList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v == "" {
			return errors.New("empty name")
		}
		*l = append(*l, v)
	}
	return nil
}

// DurationPrecision is the precision with which the store keeps
// durations (time limits, rate windows) and times: whole milliseconds. A
// duration flag that is not a whole number of it is refused, never
// rounded.
const DurationPrecision = time.Millisecond

// CheckDuration refuses a duration flag the store would change: below
// least, or not a whole number of DurationPrecision. The message names
// the smallest allowed value.
func CheckDuration(flagName string, d, least time.Duration) error {
	switch {
	case d < least:
		return errors.New("--" + flagName + " " + d.String() + " is below the smallest allowed value, " + least.String())
	case d%DurationPrecision != 0:
		return errors.New("--" + flagName + " " + d.String() + " is not a whole number of milliseconds, the precision the store keeps (the smallest allowed value is " + least.String() + ")")
	}
	return nil
}

// Duration is the flag.Value of every duration flag: it reads what
// humanize.ParseDuration reads ("30d", "12h", "1h30m", "90s") and
// refuses a negative duration (none of sessionctl's has a meaning); help
// shows its default as it is typed ("1h", not Go's "1h0m0s").
type Duration time.Duration

func (d *Duration) String() string { return humanize.Short(time.Duration(*d)) }

// Set parses s.
func (d *Duration) Set(s string) error {
	v, err := humanize.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("a negative duration is refused (give " + humanize.DurationExample + ")")
	}
	*d = Duration(v)
	return nil
}

// DurationFlag defines a duration flag of fs (Duration) with its default
// and returns where its value is kept.
func DurationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	DurationVar(fs, p, name, value, usage)
	return p
}

// DurationVar is DurationFlag keeping the value in *p.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*Duration)(p), name, usage)
}
