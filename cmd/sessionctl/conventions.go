package main

// Conventions of the command line that every command shares: global
// flags anywhere on the line, --version, and "did you mean" for a
// mistyped command or flag. sessionctl keeps its own spec-driven command
// table (main.go, cli.go) instead of a framework: these are small, and
// its help, usage errors and exit statuses are pinned by golden tests.

import (
	"flag"
	"strings"
)

// hoistGlobals moves the global flags (--db PATH, --db=PATH, --version)
// found after the command name to the front of args, so that
// "sessionctl list --db x.db" works as "sessionctl --db x.db list".
// Arguments after "--" are left alone.
func hoistGlobals(args []string) []string {
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
		f, ok := lookupGlobal(name)
		if !ok {
			rest = append(rest, a)
			continue
		}
		globals = append(globals, a)
		if f.arg != "" && !hasValue && i+1 < len(args) {
			globals = append(globals, args[i+1])
			i++
		}
	}
	return append(globals, rest...)
}

// suggest returns the candidate closest to s, if it is close enough to be
// a typo (at most a third of s's length in edits, and at least 1), or a
// candidate s is a prefix of; "" when none is.
func suggest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+1
	if bestD > 2 {
		bestD = 2
	}
	bestD++ // distances below this are suggestions
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(s) >= 2 {
		for _, c := range candidates {
			if strings.HasPrefix(c, s) {
				return c
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (in bytes: names
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// commandNames lists the commands and help, for suggestions.
func commandNames() []string {
	names := []string{"help"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// didYouMean is " (did you mean NAME?)" when a candidate is close to s.
func didYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return " (did you mean " + c + "?)"
	}
	return ""
}

// flagSuggestion adds a suggestion to the message of an unknown flag of fs.
func flagSuggestion(fs *flag.FlagSet, err error) string {
	msg := flagErr(err)
	name, ok := strings.CutPrefix(msg, "unknown flag --")
	if !ok {
		return msg
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := suggest(name, names); c != "" {
		return msg + " (did you mean --" + c + "?)"
	}
	return msg
}
