// Package completion is sessionctl's shell completion, answered by
// sessionctl itself: each shell's script (Scripts) hands the words of
// the line to "sessionctl __complete SHELL WORD...", which reads the
// command table (the commands, each one's spec and flag set, and the
// global flags: Table), the one the parser and --help read. A command,
// action, flag or value cannot be offered without existing, nor exist
// without being offered.
package completion

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
)

// Scripts are the completion scripts, by shell. Each passes the line's
// words after "sessionctl" up to the one being completed; an empty
// answer completes file names.
var Scripts = map[string]string{
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

// Command is a command as completion offers it.
type Command struct{ Name, Summary string }

// Global is a global flag as completion offers it.
type Global struct {
	Name, Help string
	TakesValue bool
}

// Table is the command table completion reads.
type Table struct {
	Commands []Command
	Globals  []Global
	// Describe returns the spec and flag set of the command called name.
	Describe func(name string) (cmdspec.Described, bool)
}

// Candidate is one word completion offers, with what it is.
type Candidate struct{ Word, About string }

// Write answers a completion script: words are the line's words after
// "sessionctl", the last the one being completed. It prints the
// candidates starting with it, one a line ("word" for bash,
// "word:about" for zsh, "word<TAB>about" for fish).
func (t Table) Write(w io.Writer, shell string, words []string) {
	cur := words[len(words)-1]
	for _, c := range t.Candidates(words) {
		switch {
		case !strings.HasPrefix(c.Word, cur):
		case shell == "zsh" && c.About != "":
			fmt.Fprintf(w, "%s:%s\n", strings.ReplaceAll(c.Word, ":", `\:`), c.About)
		case shell == "fish" && c.About != "":
			fmt.Fprintf(w, "%s\t%s\n", c.Word, c.About)
		default:
			fmt.Fprintln(w, c.Word)
		}
	}
}

// Candidates returns what may complete the last of words (before the
// prefix filter): the values of the flag before it, flags when it begins
// with a dash, else commands, actions or operand values.
func (t Table) Candidates(words []string) []Candidate {
	cur := words[len(words)-1]
	var d *cmdspec.Described
	help := false
	var pos []string
	pending := "" // the flag whose value the next word is
	for _, w := range words[:len(words)-1] {
		switch {
		case pending != "":
			pending = ""
		case strings.HasPrefix(w, "-") && len(w) > 1:
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !hasValue && t.TakesValue(d, name) {
				pending = name
			}
		case d == nil && !help:
			if dc, ok := t.Describe(w); ok {
				d = &dc
			}
			help = w == "help"
		default:
			pos = append(pos, w)
		}
	}
	var out []Candidate
	add := func(about string, words ...string) {
		for _, w := range words {
			out = append(out, Candidate{w, about})
		}
	}
	switch {
	case pending != "":
		if d != nil {
			add("", d.Spec.Values["--"+pending]...)
		}
	case strings.HasPrefix(cur, "-"):
		if d != nil {
			d.Flags.VisitAll(func(f *flag.Flag) {
				_, usage := flag.UnquoteUsage(f)
				add(usage, "--"+f.Name)
			})
			add("show the command's help", "--help")
		}
		for _, f := range t.Globals {
			add(f.Help, "--"+f.Name)
		}
	case d == nil && (!help || len(pos) == 0):
		for _, c := range t.Commands {
			add(c.Summary, c.Name)
		}
		if help {
			add("the exit statuses", "exit")
		} else {
			add("show help or the exit statuses", "help")
		}
	case d != nil && len(pos) == 0:
		for _, a := range d.Spec.Actions {
			if !a.Bare {
				add("", a.Name)
			}
		}
		add("", d.Spec.Values[""]...)
	case d != nil:
		add("", d.Spec.Values[strings.Join(pos, " ")]...)
	}
	return out
}

// TakesValue reports whether the flag called name, global or of the
// command d (nil: none yet), takes a value (the next word).
func (t Table) TakesValue(d *cmdspec.Described, name string) bool {
	for _, f := range t.Globals {
		if f.Name == name {
			return f.TakesValue
		}
	}
	if d == nil {
		return false
	}
	f := d.Flags.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
