package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// maxImportBytes bounds one import file.
const maxImportBytes = 512 << 20

var importSpec = spec{
	name: "import",
	args: "FILE...",
	about: `Imports sessions from files written by "sessionctl export" ("-" reads stdin).
Each file's governed sessions are restored in one transaction, exactly as
exported. Files are imported in order; the first bad file stops the import
(the files before it stay imported) — use --dry-run to check every file
first. An id that already exists fails its file unless --skip-existing.
Creates the database file when it does not exist. When stderr is a
terminal and there are several files, a progress line is shown.`,
	examples: []string{
		"sessionctl import all.json",
		"sessionctl --db restored.db import --skip-existing exports/*.json",
	},
}

// importJSON is the JSON document of import.
type importJSON struct {
	Files    int   `json:"files"`
	Governed int64 `json:"governed_sessions"`
	Skipped  int64 `json:"skipped"`
	DryRun   bool  `json:"dry_run"`
}

// importFile is one parsed input file.
type importFile struct {
	governed []store.Session
}

func runImport(ctx context.Context, g *globals, args []string) int {
	sp := importSpec
	fs := g.newFlags(sp)
	skip := fs.Bool("skip-existing", false, "leave sessions whose id exists untouched instead of failing")
	dryRun := fs.Bool("dry-run", false, "parse and validate every file, write nothing")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 1, -1); bad {
		return code
	}
	var st *sqlstore.Store
	if !*dryRun {
		var err error
		if st, err = g.openOrCreate(ctx); err != nil {
			return g.fail(sp.name, err)
		}
		defer st.Close()
	}
	progress := newProgress(g.stderr, len(pos))
	doc := importJSON{DryRun: *dryRun}
	for i, name := range pos {
		progress.show(i, name)
		f, err := readImportFile(g, name)
		if err == nil && !*dryRun {
			var n int64
			n, err = st.Governance().(*sqlstore.Governance).Restore(ctx, store.RestoreRequest{Sessions: f.governed, SkipExisting: *skip})
			doc.Governed += n
			doc.Skipped += int64(len(f.governed)) - n
		} else if err == nil {
			doc.Governed += int64(len(f.governed))
		}
		if err != nil {
			progress.done()
			if errors.Is(err, store.ErrConflict) {
				err = fmt.Errorf("%w: a session id in the file exists (use --skip-existing)", err)
			}
			if doc.Files > 0 {
				err = fmt.Errorf("%w (the %d %s before it %s imported)", err, doc.Files, plural(doc.Files, "file", "files"), plural(doc.Files, "was", "were"))
			}
			return g.fail(sp.name, fmt.Errorf("%s: %w", name, err))
		}
		doc.Files++
	}
	progress.done()
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	verb := "imported"
	if *dryRun {
		verb = "checked (dry run, nothing written)"
	}
	fmt.Fprintf(g.stdout, "%s %d governed %s from %d %s", verb, doc.Governed, plural(int(doc.Governed), "session", "sessions"), doc.Files, plural(doc.Files, "file", "files"))
	if doc.Skipped > 0 {
		fmt.Fprintf(g.stdout, ", %d existing skipped", doc.Skipped)
	}
	fmt.Fprintln(g.stdout)
	return exitOK
}

// readImportFile reads and validates one file ("-" is stdin).
func readImportFile(g *globals, name string) (importFile, error) {
	var r io.Reader
	if name == "-" {
		r = g.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return importFile{}, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxImportBytes+1))
	if err != nil {
		return importFile{}, err
	}
	if len(data) > maxImportBytes {
		return importFile{}, store.Invalid("file", fmt.Sprintf("larger than %s", humanBytes(maxImportBytes)))
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return importFile{}, store.Invalid("file", "not a JSON object: "+jsonErr(err))
	}
	if head.Format != exportFormat {
		return importFile{}, store.Invalid("format", fmt.Sprintf("not a %s file", exportFormat))
	}
	return parseExport(data, head.Version)
}

// parseExport decodes and validates a sessionctl export document.
func parseExport(data []byte, version int) (importFile, error) {
	if version < 1 || version > exportVersion {
		return importFile{}, store.Invalid("version", fmt.Sprintf("export version %d is not supported (this binary reads 1 to %d)", version, exportVersion))
	}
	var doc exportDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return importFile{}, store.Invalid("file", jsonErr(err))
	}
	var f importFile
	for i, v := range doc.Governed {
		s, err := v.session()
		if err == nil {
			err = s.ValidateStored()
		}
		if err != nil {
			return importFile{}, fmt.Errorf("governed_sessions[%d]: %w", i, asInvalid(err))
		}
		f.governed = append(f.governed, s)
	}
	if err := (store.RestoreRequest{Sessions: f.governed}).Validate(); err != nil {
		return importFile{}, err
	}
	return f, nil
}

// asInvalid makes a parse error an invalid-input error (exit status 2).
func asInvalid(err error) error {
	if errors.Is(err, store.ErrInvalidInput) {
		return err
	}
	return store.Invalid("file", err.Error())
}

// jsonErr describes a JSON decoding error briefly.
func jsonErr(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, err)
	}
	return err.Error()
}

// progress shows "importing 3/120: name" on a terminal, overwritten in
// place; on anything else (a pipe, a file, a test) it stays silent.
type progress struct {
	w     io.Writer
	total int
	on    bool
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, on: total > 1 && isTerminal(w)}
}

func (p *progress) show(i int, name string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[Kimporting %d/%d: %s", i+1, p.total, name)
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
