package migrations

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/pressly/goose/v3"
)

// Opening a new store applies every migration, and goose parses each SQL
// file again for every Provider it builds: all the files of a dialect on
// every fresh store. Its parser takes a 4 MiB buffer from a sync.Pool for
// every line it checks for a closing semicolon, which the race detector's
// pool (it drops a quarter of what is put back) and the garbage collector
// turn into gigabytes of zeroed memory per store; a test process that
// creates hundreds of stores spent a fifth of its time there. The files
// are embedded and never change while the process runs, so they are split
// into statements once per process (split, below, reads goose's format the
// way goose does; TestSplitMatchesGoose holds the two to the same
// statements for every file) and the providers that apply them are built
// over those statements.

// parsedMigration is one migration file split into its statements.
type parsedMigration struct {
	version  int64
	up, down []string
}

var (
	sqliteParsed   = sync.OnceValues(func() ([]parsedMigration, error) { return parseAll(SQLite()) })
	postgresParsed = sync.OnceValues(func() ([]parsedMigration, error) { return parseAll(Postgres()) })
)

// NewSQLiteUpgradeProvider returns a goose provider that applies the
// SQLite migrations to db as NewSQLiteProvider's does, but over the
// statements split once per process instead of the files parsed again by
// each provider. It is for opening a store (which applies what is
// pending); goose reports its migrations as Go migrations without a
// source file, so tools that show the files of the migrations (status)
// use NewSQLiteProvider.
func NewSQLiteUpgradeProvider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	return newUpgradeProvider(goose.DialectSQLite3, db, sqliteParsed, opts)
}

// NewPostgresUpgradeProvider is NewSQLiteUpgradeProvider for the
// PostgreSQL migrations (see NewPostgresProvider).
func NewPostgresUpgradeProvider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	return newUpgradeProvider(goose.DialectPostgres, db, postgresParsed, opts)
}

func newUpgradeProvider(dialect goose.Dialect, db *sql.DB, parsed func() ([]parsedMigration, error), opts []goose.ProviderOption) (*goose.Provider, error) {
	ms, err := parsed()
	if err != nil {
		return nil, err
	}
	gms := make([]*goose.Migration, len(ms))
	for i, m := range ms {
		gms[i] = goose.NewGoMigration(m.version, runStatements(m.up), runStatements(m.down))
	}
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(gms...)}, opts...)
	return goose.NewProvider(dialect, db, nil, opts...)
}

// runStatements runs stmts in order in goose's transaction of the
// migration, as goose runs a SQL file's statements; nil (an empty
// migration, which goose records without running anything) for none.
func runStatements(stmts []string) *goose.GoFunc {
	if len(stmts) == 0 {
		return nil
	}
	return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}}
}

// parseAll splits every migration file of fsys, in version order.
func parseAll(fsys fs.FS) ([]parsedMigration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]parsedMigration, 0, len(names))
	for _, name := range names { // Glob returns names sorted: "00001_…" order
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		up, down, err := split(string(b))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		out = append(out, parsedMigration{version: v, up: up, down: down})
	}
	return out, nil
}

// split returns the up and down statements of a goose SQL migration as
// goose's parser (internal/sqlparser, v3) returns them: statements end at
// a line whose last word before any "--" comment ends in ";", or at
// "-- +goose StatementEnd" after "-- +goose StatementBegin"; comments and
// blank lines before a statement are dropped, and each statement is
// trimmed of surrounding space. It knows the annotations the store's
// files use (Up, Down, StatementBegin, StatementEnd) and refuses the
// others (NO TRANSACTION, ENVSUB ON/OFF), whose run differs; a file that
// needs one must be supported here first, and TestSplitMatchesGoose fails
// until it is.
func split(text string) (up, down []string, err error) {
	const (
		start = iota
		inUp
		inDown
	)
	section, block := start, false
	var buf strings.Builder
	emit := func() {
		stmt := strings.TrimSpace(buf.String())
		buf.Reset()
		if section == inUp {
			up = append(up, stmt)
		} else {
			down = append(down, stmt)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, len(text)+1)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if section == start && trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "--") && strings.Contains(line, "+goose") {
			a, err := annotation(line)
			if err != nil {
				return nil, nil, err
			}
			switch a {
			case "Up":
				if section != start {
					return nil, nil, fmt.Errorf("a second '-- +goose Up'")
				}
				section = inUp
			case "Down":
				if section != inUp || block {
					return nil, nil, fmt.Errorf("'-- +goose Down' not after the Up section")
				}
				if strings.TrimSpace(buf.String()) != "" {
					return nil, nil, fmt.Errorf("an up statement without its closing semicolon")
				}
				section = inDown
			case "StatementBegin":
				if section == start || block {
					return nil, nil, fmt.Errorf("'-- +goose StatementBegin' outside a section or inside a block")
				}
				block = true
			case "StatementEnd":
				if !block {
					return nil, nil, fmt.Errorf("'-- +goose StatementEnd' without StatementBegin")
				}
				if buf.Len() == 0 {
					// goose ignores such a line and then loses the
					// next statement's first lines.
					return nil, nil, fmt.Errorf("an empty StatementBegin/StatementEnd block")
				}
				block = false
				emit()
			default:
				return nil, nil, fmt.Errorf("the annotation %q is not supported by the migrations package (see split)", a)
			}
			continue
		}
		if buf.Len() == 0 && (strings.HasPrefix(trimmed, "--") || line == "") {
			continue // comments and blank lines before a statement
		}
		if section == start {
			return nil, nil, fmt.Errorf("SQL before '-- +goose Up': %q", line)
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		if !block && endsWithSemicolon(line) {
			emit()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	switch {
	case section == start:
		return nil, nil, fmt.Errorf("no '-- +goose Up' annotation")
	case block:
		return nil, nil, fmt.Errorf("a '-- +goose StatementBegin' without its StatementEnd")
	case strings.TrimSpace(buf.String()) != "":
		return nil, nil, fmt.Errorf("a statement without its closing semicolon at the end")
	}
	return up, down, nil
}

// annotation returns the goose annotation of line ("-- +goose Up"),
// spelled as goose spells it, matched without regard to case as goose
// matches it.
func annotation(line string) (string, error) {
	if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
		return "", fmt.Errorf("the annotation %q is indented", line)
	}
	cmd := strings.Replace(strings.ReplaceAll(line, "--", ""), "+goose", "", 1)
	if strings.Contains(cmd, "+goose") {
		return "", fmt.Errorf("%q holds two annotations", line)
	}
	cmd = strings.TrimSpace(cmd)
	for _, a := range []string{"Up", "Down", "StatementBegin", "StatementEnd", "NO TRANSACTION", "ENVSUB ON", "ENVSUB OFF"} {
		if strings.EqualFold(a, cmd) {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown annotation %q", line)
}

// endsWithSemicolon reports whether the last word of line before a word
// starting with "--" ends in ";" (goose's test for the end of a statement).
func endsWithSemicolon(line string) bool {
	prev := ""
	for _, word := range strings.Fields(line) {
		if strings.HasPrefix(word, "--") {
			break
		}
		prev = word
	}
	return strings.HasSuffix(prev, ";")
}
