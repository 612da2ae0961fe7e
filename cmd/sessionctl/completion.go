package main

// Shell completion, answered by sessionctl itself: each shell's script
// hands the words of the line to "sessionctl __complete SHELL WORD...",
// which reads the command table (the commands, each one's spec and flag
// set, as describe reads them, and the global flags), the one the parser
// and --help read. A command, action, flag or value cannot be offered
// without existing, nor exist without being offered.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

var completionSpec = spec{
	name: "completion",
	args: "bash | zsh | fish",
	about: `Prints a shell completion script for sessionctl: commands, their flags,
their actions (agents show, audit verify, migrate up, completion bash, ...),
the global flags, and the values of flags and operands that take one of a
few (list --facet runtime, audit --kind checkpoint, hold release
conversations, retention set conversations_idle, ...). The script asks
sessionctl for the words, so they are always this binary's. Load it in the
shell's start-up file.`,
	examples: []string{
		`source <(sessionctl completion bash)     # in ~/.bashrc`,
		`sessionctl completion zsh > "${fpath[1]}/_sessionctl"`,
		`sessionctl completion fish > ~/.config/fish/completions/sessionctl.fish`,
	},
	actions: []action{{name: "bash"}, {name: "zsh"}, {name: "fish"}},
}

// completionScripts are the scripts, by shell. Each passes the line's
// words after "sessionctl" up to the one being completed; an empty
// answer completes file names.
var completionScripts = map[string]string{
	"bash": `# bash completion for sessionctl (sessionctl completion bash)
_sessionctl() {
  local IFS=$'\n'
  COMPREPLY=($(sessionctl __complete bash "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _sessionctl sessionctl
`,
	"zsh": `#compdef sessionctl
# zsh completion for sessionctl (sessionctl completion zsh)
_sessionctl() {
  local -a cands
  cands=("${(@f)$(sessionctl __complete zsh "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -z ${cands[1]} ]]; then _files; else _describe sessionctl cands; fi
}
if [[ ${funcstack[1]} == _sessionctl ]]; then _sessionctl "$@"; else compdef _sessionctl sessionctl; fi
`,
	"fish": `# fish completion for sessionctl (sessionctl completion fish)
function __sessionctl_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l out (sessionctl __complete fish $words (commandline -ct) 2>/dev/null)
    if set -q out[1]
        printf '%s\n' $out
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c sessionctl -f -a '(__sessionctl_complete)'
`,
}

func runCompletion(ctx context.Context, g *globals, args []string) error {
	sp := completionSpec
	fs := g.newFlags(sp)
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	script, ok := completionScripts[pos[0]]
	if !ok {
		return g.usageErr(sp.name, "unknown shell %q: bash, zsh or fish%s", pos[0], didYouMean(pos[0], []string{"bash", "zsh", "fish"}))
	}
	_, err = io.WriteString(rawWriter(g.stdout), script)
	return g.result(sp.name, err)
}

// candidate is one word completion offers, with what it is.
type candidate struct{ word, about string }

// runComplete answers a completion script: args are the shell and the
// line's words after "sessionctl", the last the one being completed. It
// prints the candidates starting with it, one a line ("word" for bash,
// "word:about" for zsh, "word<TAB>about" for fish).
func (g *globals) runComplete(args []string) int {
	if len(args) < 2 {
		return exitUsage
	}
	shell, words := args[0], args[1:]
	cur := words[len(words)-1]
	w := rawWriter(g.stdout)
	for _, c := range completions(words) {
		switch {
		case !strings.HasPrefix(c.word, cur):
		case shell == "zsh" && c.about != "":
			fmt.Fprintf(w, "%s:%s\n", strings.ReplaceAll(c.word, ":", `\:`), c.about)
		case shell == "fish" && c.about != "":
			fmt.Fprintf(w, "%s\t%s\n", c.word, c.about)
		default:
			fmt.Fprintln(w, c.word)
		}
	}
	return exitOK
}

// completions returns what may complete the last of words (before the
// prefix filter): the values of the flag before it, flags when it begins
// with a dash, else commands, actions or operand values.
func completions(words []string) []candidate {
	cur := words[len(words)-1]
	var d *described
	help := false
	var pos []string
	pending := "" // the flag whose value the next word is
	for _, w := range words[:len(words)-1] {
		switch {
		case pending != "":
			pending = ""
		case strings.HasPrefix(w, "-") && len(w) > 1:
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !hasValue && takesValue(d, name) {
				pending = name
			}
		case d == nil && !help:
			if c, ok := lookup(w); ok {
				dc := describe(c)
				d = &dc
			}
			help = w == "help"
		default:
			pos = append(pos, w)
		}
	}
	var out []candidate
	add := func(about string, words ...string) {
		for _, w := range words {
			out = append(out, candidate{w, about})
		}
	}
	switch {
	case pending != "":
		if d != nil {
			add("", d.sp.values["--"+pending]...)
		}
	case strings.HasPrefix(cur, "-"):
		if d != nil {
			d.fs.VisitAll(func(f *flag.Flag) {
				_, usage := flag.UnquoteUsage(f)
				add(usage, "--"+f.Name)
			})
			add("show the command's help", "--help")
		}
		for _, f := range globalFlags {
			add(f.help, "--"+f.name)
		}
	case d == nil && (!help || len(pos) == 0):
		for _, c := range commands() {
			add(c.summary, c.name)
		}
		if help {
			add("the exit statuses", "exit")
		} else {
			add("show help or the exit statuses", "help")
		}
	case d != nil && len(pos) == 0:
		for _, a := range d.sp.actions {
			if !a.bare {
				add("", a.name)
			}
		}
		add("", d.sp.values[""]...)
	case d != nil:
		add("", d.sp.values[strings.Join(pos, " ")]...)
	}
	return out
}

// takesValue reports whether the flag called name, global or of the
// command d (nil: none yet), takes a value (the next word).
func takesValue(d *described, name string) bool {
	if f, ok := lookupGlobal(name); ok {
		return f.arg != ""
	}
	if d == nil {
		return false
	}
	f := d.fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
