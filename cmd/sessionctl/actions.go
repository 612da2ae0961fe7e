package main

// The actions of the commands that have several (audit verify, retention
// set, keys gc, ...) and the flags each takes. A command's flag set holds
// the flags of all its actions; a flag given to an action that does not
// take it is a usage error (it used to be accepted and ignored: audit
// verify --kind bogus verified everything). TestActionFlags walks this
// table for every command.

import (
	"flag"
	"slices"
)

// action is one action of a command and the flags it takes (their names
// without dashes).
type action struct {
	name  string
	flags []string
	// bare: the action is chosen without its word (hold FACET ID holds).
	bare bool
}

// commandActions declares, for each command that has actions, the flags
// of each action.
func commandActions() map[string][]action {
	return map[string][]action{
		"agents": {
			{name: "list", flags: []string{"app", "user", "idle", "limit", "after", "all", "json"}},
			{name: "show", flags: []string{"last", "json"}},
			{name: "events", flags: []string{"limit", "last", "from", "invocation", "follow", "json"}},
			{name: "state", flags: []string{"json"}},
			{name: "delete", flags: []string{"yes", "json"}},
		},
		"audit": {
			{name: "list", flags: []string{"agent", "session", "kind", "outcome", "since", "until", "limit", "after", "all", "json"}},
			{name: "verify", flags: []string{"json"}},
			{name: "checkpoint", flags: []string{"agent", "json"}},
			{name: "prune", flags: []string{"agent", "before", "older-than", "json"}},
		},
		"hold": {
			{name: "list", flags: []string{"json"}},
			{name: "add", flags: []string{"reason", "json"}, bare: true},
			{name: "release", flags: []string{"json"}},
		},
		"keys": {
			{name: "status", flags: []string{"json"}},
			{name: "rotate", flags: []string{"json"}},
			{name: "gc", flags: []string{"dry-run", "grace", "json"}},
			{name: "new", flags: []string{"kek-version", "json"}},
		},
		"migrate": {
			{name: "status", flags: []string{"json"}},
			{name: "up", flags: []string{"json"}},
		},
		"retention": {
			{name: "show", flags: []string{"sweeps", "json"}},
			{name: "set", flags: []string{"reads-count", "json"}},
			{name: "remove", flags: []string{"json"}},
		},
		"completion": {{name: "bash"}, {name: "zsh"}, {name: "fish"}},
	}
}

// checkActionFlags fails with a usage error when a flag given on the
// command line (fs, parsed) is not one that action act of command takes.
func (g *globals) checkActionFlags(fs *flag.FlagSet, command, act string) error {
	acts := commandActions()[command]
	i := slices.IndexFunc(acts, func(a action) bool { return a.name == act })
	if i < 0 {
		return nil
	}
	bad := ""
	fs.Visit(func(f *flag.Flag) {
		if bad == "" && !slices.Contains(acts[i].flags, f.Name) {
			bad = f.Name
		}
	})
	if bad != "" {
		return g.usageErr(command+" "+act, "--%s does not apply to %s %s", bad, command, act)
	}
	return nil
}
