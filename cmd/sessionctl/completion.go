package main

// Shell completion, generated from the command table: the commands, each
// command's flags (read from the flag set its --help prints) and the
// actions of commands that take one (the "[a | b]" of their synopsis).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

var completionSpec = spec{
	name: "completion",
	args: "bash | zsh | fish",
	about: `Prints a shell completion script for sessionctl: commands, their flags,
their actions (agents show, audit verify, migrate up, completion bash, ...)
and the values of flags that take one of a few (list --facet runtime,
audit --kind checkpoint, ...). Load it in the shell's start-up file.`,
	examples: []string{
		`source <(sessionctl completion bash)     # in ~/.bashrc`,
		`sessionctl completion zsh > "${fpath[1]}/_sessionctl"`,
		`sessionctl completion fish > ~/.config/fish/completions/sessionctl.fish`,
	},
}

func runCompletion(ctx context.Context, g *globals, args []string) error {
	sp := completionSpec
	fs := g.newFlags(sp)
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 1, 1); err != nil {
		return err
	}
	words := completionWords()
	switch pos[0] {
	case "bash":
		err = writeBash(rawWriter(g.stdout), words)
	case "zsh":
		err = writeZsh(rawWriter(g.stdout), words)
	case "fish":
		err = writeFish(rawWriter(g.stdout), words)
	default:
		return g.usageErr(sp.name, "unknown shell %q: bash, zsh or fish%s", pos[0], didYouMean(pos[0], []string{"bash", "zsh", "fish"}))
	}
	return g.result(sp.name, err)
}

// cmdWords are what completes after one command.
type cmdWords struct {
	name, summary string
	actions       []string
	flags         []string            // with their dashes
	values        map[string][]string // the values of some flags (flagValues)
}

var (
	helpFlagRE = regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)
	// actionsRE reads the actions of a synopsis: "[a | b]", "[a|b]" or
	// "a | b" (completion's shells).
	actionsRE = regexp.MustCompile(`^\[?([a-z-]+(?: ?\| ?[a-z-]+)+)\]?`)
)

// flagValues are the values of the flags that take one of a fixed set,
// by command and flag (TestCompletionValuesMatchTheFlags checks each is a
// flag of its command whose help names every value).
func flagValues() map[string]map[string][]string {
	kinds := []string{}
	for _, k := range []store.AuditKind{store.AuditCreate, store.AuditUse, store.AuditReserve, store.AuditSettle,
		store.AuditRelease, store.AuditClose, store.AuditExpire, store.AuditLapse, store.AuditCleanup,
		store.AuditLimits, store.AuditCheckpoint} {
		kinds = append(kinds, string(k))
	}
	return map[string]map[string][]string{
		"list": {
			"--facet":  {"governed", "runtime", "conversations"},
			"--status": {string(store.StatusActive), string(store.StatusClosed), string(store.StatusExpired)},
		},
		"delete": {"--facet": {"conversations", "runtime"}},
		"create": {"--sensitivity": {string(store.SensitivityPublic), string(store.SensitivityInternal),
			string(store.SensitivityConfidential), string(store.SensitivityRestricted)}},
		"audit": {"--kind": kinds},
		"bench": {"--sync": {"FULL", "NORMAL"}},
	}
}

// completionWords reads every command's flags from its help.
func completionWords() []cmdWords {
	var out []cmdWords
	for _, c := range commands() {
		var buf bytes.Buffer
		g := &globals{stdout: &buf, stderr: io.Discard}
		c.run(context.Background(), g, []string{"--help"})
		w := cmdWords{name: c.name, summary: c.summary}
		for _, m := range helpFlagRE.FindAllStringSubmatch(buf.String(), -1) {
			w.flags = append(w.flags, m[1])
		}
		if first, _, _ := strings.Cut(strings.TrimPrefix(buf.String(), "Usage: "), "\n"); first != "" {
			_, synopsis, _ := strings.Cut(first, " "+c.name)
			synopsis = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(synopsis), "[flags]"))
			if m := actionsRE.FindStringSubmatch(synopsis); m != nil {
				for _, a := range strings.Split(m[1], "|") {
					w.actions = append(w.actions, strings.TrimSpace(a))
				}
			}
		}
		w.values = flagValues()[c.name]
		sort.Strings(w.flags)
		out = append(out, w)
	}
	return out
}

func writeBash(w io.Writer, words []cmdWords) error {
	var b strings.Builder
	b.WriteString("# bash completion for sessionctl (sessionctl completion bash)\n_sessionctl() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= i\n")
	b.WriteString("  for ((i = 1; i < COMP_CWORD; i++)); do\n    case ${COMP_WORDS[i]} in\n      --db) ((i++)) ;;\n      -*) ;;\n      *) cmd=${COMP_WORDS[i]}; break ;;\n    esac\n  done\n")
	b.WriteString("  case $cmd in\n")
	var names []string
	for _, c := range words {
		names = append(names, c.name)
		fmt.Fprintf(&b, "    %s)\n", c.name)
		if len(c.values) > 0 {
			b.WriteString("      case $prev in\n")
			for _, f := range sortedKeys(c.values) {
				fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", f, strings.Join(c.values[f], " "))
			}
			b.WriteString("      esac\n")
		}
		fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(c.words(), " "))
	}
	fmt.Fprintf(&b, "    *) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(append(names, "help", "--db", "--version"), " "))
	b.WriteString("  esac\n}\ncomplete -o default -F _sessionctl sessionctl\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, words []cmdWords) error {
	var b strings.Builder
	b.WriteString("#compdef sessionctl\n# zsh completion for sessionctl (sessionctl completion zsh)\n_sessionctl() {\n")
	b.WriteString("  local -a cmds\n  cmds=(\n")
	for _, c := range words {
		fmt.Fprintf(&b, "    %s\n", zshQuote(c.name+":"+c.summary))
	}
	b.WriteString("    'help:show help or the exit statuses'\n  )\n")
	b.WriteString("  local cmd=${words[2]} prev=${words[CURRENT-1]}\n  if [[ $cmd == --db ]]; then cmd=${words[4]}; fi\n")
	b.WriteString("  if (( CURRENT == 2 )) || [[ -z $cmd || $cmd == ${words[CURRENT]} ]]; then\n    _describe 'command' cmds\n    return\n  fi\n")
	b.WriteString("  case $cmd in\n")
	for _, c := range words {
		fmt.Fprintf(&b, "    %s)\n", c.name)
		if len(c.values) > 0 {
			b.WriteString("      case $prev in\n")
			for _, f := range sortedKeys(c.values) {
				fmt.Fprintf(&b, "        %s) compadd -- %s; return ;;\n", f, strings.Join(c.values[f], " "))
			}
			b.WriteString("      esac\n")
		}
		fmt.Fprintf(&b, "      compadd -- %s ;;\n", strings.Join(c.words(), " "))
	}
	b.WriteString("  esac\n}\ncompdef _sessionctl sessionctl\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFish(w io.Writer, words []cmdWords) error {
	var b strings.Builder
	b.WriteString("# fish completion for sessionctl (sessionctl completion fish)\n")
	b.WriteString("complete -c sessionctl -f\n")
	b.WriteString("complete -c sessionctl -l db -r -d 'database file or postgres:// URL'\n")
	b.WriteString("complete -c sessionctl -l version -d 'print the versions'\n")
	var names []string
	for _, c := range words {
		names = append(names, c.name)
	}
	for _, c := range words {
		fmt.Fprintf(&b, "complete -c sessionctl -n 'not __fish_seen_subcommand_from %s' -a %s -d %s\n", strings.Join(names, " "), c.name, zshQuote(c.summary))
	}
	for _, c := range words {
		for _, a := range c.actions {
			fmt.Fprintf(&b, "complete -c sessionctl -n '__fish_seen_subcommand_from %s' -a %s\n", c.name, a)
		}
		for _, f := range c.flags {
			values := ""
			if v := c.values[f]; len(v) > 0 {
				// -x: the flag takes one of these, not a file.
				values = " -x -a " + zshQuote(strings.Join(v, " "))
			}
			fmt.Fprintf(&b, "complete -c sessionctl -n '__fish_seen_subcommand_from %s' -l %s%s\n", c.name, strings.TrimPrefix(f, "--"), values)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// words are what completes after the command: its actions, its flags and
// --db.
func (c cmdWords) words() []string {
	return append(append(append([]string{}, c.actions...), c.flags...), "--db")
}

// sortedKeys returns the keys of m in order (the scripts are stable).
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
