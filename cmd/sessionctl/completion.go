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
)

var completionSpec = spec{
	name: "completion",
	args: "bash | zsh | fish",
	about: `Prints a shell completion script for sessionctl: commands, their flags and
their actions (agents show, audit verify, migrate up, ...). Load it in the
shell's start-up file.`,
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
	flags         []string // with their dashes
}

var (
	helpFlagRE = regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)
	actionsRE  = regexp.MustCompile(`^\[([a-z-]+(?: \| [a-z-]+)+)\]`)
)

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
				w.actions = strings.Split(m[1], " | ")
			}
		}
		sort.Strings(w.flags)
		out = append(out, w)
	}
	return out
}

func writeBash(w io.Writer, words []cmdWords) error {
	var b strings.Builder
	b.WriteString("# bash completion for sessionctl (sessionctl completion bash)\n_sessionctl() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n")
	b.WriteString("  for ((i = 1; i < COMP_CWORD; i++)); do\n    case ${COMP_WORDS[i]} in\n      --db) ((i++)) ;;\n      -*) ;;\n      *) cmd=${COMP_WORDS[i]}; break ;;\n    esac\n  done\n")
	b.WriteString("  case $cmd in\n")
	var names []string
	for _, c := range words {
		names = append(names, c.name)
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(append(append([]string{}, c.actions...), append(c.flags, "--db")...), " "))
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
	b.WriteString("  local cmd=${words[2]}\n  if [[ $cmd == --db ]]; then cmd=${words[4]}; fi\n")
	b.WriteString("  if (( CURRENT == 2 )) || [[ -z $cmd || $cmd == ${words[CURRENT]} ]]; then\n    _describe 'command' cmds\n    return\n  fi\n")
	b.WriteString("  case $cmd in\n")
	for _, c := range words {
		fmt.Fprintf(&b, "    %s) compadd -- %s ;;\n", c.name, strings.Join(append(append([]string{}, c.actions...), append(c.flags, "--db")...), " "))
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
			fmt.Fprintf(&b, "complete -c sessionctl -n '__fish_seen_subcommand_from %s' -l %s\n", c.name, strings.TrimPrefix(f, "--"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
