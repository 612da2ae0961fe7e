package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

// maxImportBytes bounds one import file.
const maxImportBytes = 512 << 20

var importSpec = spec{
	name: "import",
	args: "FILE...",
	about: `Imports sessions from files ("-" reads stdin) of two formats, told apart by
their content:

  - "sessionctl export" files (version 1 or 2): governed sessions are
    restored in one transaction exactly as exported (counters, rate
    window, status, times); runtime sessions with their times, overrides
    and uploads (each checked against its SHA-256; turn state starts
    afresh); conversations come back with their messages, cost records,
    artifacts, trace events, run records and reports, with their times
    (message positions renumbered from 0; the version counts the import's
    own writes); agent sessions with their times, version, session state
    and event logs, and the app and user state they share (a stored state
    key with another value is a conflict, like an existing id);
  - a3s session files (the JSON the a3s-code file store writes per
    session), as conversations; an "api_key" in them is never stored.

A file is checked completely before anything of it is written. Files are
imported in order; the first bad file stops the import (the files before it
stay imported) — use --dry-run to check every file first. An id that
already exists fails its file unless --skip-existing. Creates the database
file when it does not exist. When stderr is a terminal and there are
several files, a progress line is shown.`,
	examples: []string{
		"sessionctl import all.json",
		"sessionctl --db restored.db import --skip-existing ~/.a3s/sessions/*.json",
	},
}

// importJSON is the JSON document of import.
type importJSON struct {
	Files int `json:"files"`
	facetCounts
	Skipped int64 `json:"skipped"`
	DryRun  bool  `json:"dry_run"`
}

// importFile is one parsed and validated input file: the items of each
// facet (see facetOps.parse).
type importFile struct {
	governed      []store.Session
	runtime       []rtImport
	conversations []convExport
	agent         agentImport
	audit         store.AuditRestoreRequest
	spend         store.SpendRecords
}

// importRun is the import of one file in progress: what the facets'
// prepare and restore functions read and fill in.
type importRun struct {
	st    cliStore
	file  *importFile
	skip  bool
	doc   *importJSON
	clock *importClock
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
	all, err := registeredFacets()
	if err != nil {
		return g.fail(sp.name, err)
	}
	// The store runs on the import's clock, so that records the store
	// stamps itself get their exported times (see importClock).
	clock := newImportClock(g.now)
	g.now = clock.now
	var st cliStore
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
		if err == nil && *dryRun {
			doc.Governed += int64(len(f.governed))
			doc.Runtime += int64(len(f.runtime))
			doc.Conversations += int64(len(f.conversations))
			doc.AgentSessions += int64(len(f.agent.sessions))
		} else if err == nil {
			err = importOne(ctx, all, &importRun{st: st, file: &f, skip: *skip, doc: &doc, clock: clock})
		}
		if err != nil {
			progress.done()
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
	fmt.Fprintf(g.stdout, "%s %s from %d %s", verb, countsText(doc.facetCounts),
		doc.Files, plural(doc.Files, "file", "files"))
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
	switch head.Format {
	case exportFormat:
		return parseExport(data, head.Version)
	case "":
		c, err := a3s.Decode(bytes.NewReader(data))
		if err != nil {
			return importFile{}, fmt.Errorf("neither a %s file nor an a3s session file: %w", exportFormat, asInvalid(err))
		}
		x := convExport{Conversation: c}
		if err := x.validate("a3s"); err != nil {
			return importFile{}, err
		}
		return importFile{conversations: []convExport{x}}, nil
	}
	return importFile{}, store.Invalid("format", fmt.Sprintf("unknown format %q (this binary reads %s and a3s session files)", head.Format, exportFormat))
}

// importOne writes one validated file: first every facet checks that
// none of its items exists (or drops those with --skip-existing), so that
// a conflict writes nothing; then every facet restores its items, in
// registry order.
func importOne(ctx context.Context, all []registered, x *importRun) error {
	for _, f := range all {
		if err := f.ops.prepare(ctx, x); err != nil {
			return err
		}
	}
	for _, f := range all {
		if err := f.ops.restore(ctx, x); err != nil {
			return err
		}
	}
	return nil
}

// parseExport decodes and validates a sessionctl export document: each
// facet validates its section.
func parseExport(data []byte, version int) (importFile, error) {
	if version < 1 || version > exportVersion {
		return importFile{}, store.Invalid("version", fmt.Sprintf("export version %d is not supported (this binary reads 1 to %d)", version, exportVersion))
	}
	all, err := registeredFacets()
	if err != nil {
		return importFile{}, err
	}
	var doc exportDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return importFile{}, store.Invalid("file", jsonErr(err))
	}
	var f importFile
	for _, fc := range all {
		if err := fc.ops.parse(&doc, version, &f); err != nil {
			return importFile{}, err
		}
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

// importClock is the store's clock during an import. It reads the current
// time, except while the import writes a record whose times the store
// stamps itself and the export carries (an agent session's creation and
// update times, ...): then it reads the exported time, so that the
// restored record carries the times of the original. An import writes
// from one goroutine, one call at a time, so a pinned time applies to
// exactly the calls made while it is set.
type importClock struct {
	base func() time.Time
	mu   sync.Mutex
	at   time.Time
}

// newImportClock returns a clock reading base (nil: time.Now).
func newImportClock(base func() time.Time) *importClock {
	if base == nil {
		base = time.Now
	}
	return &importClock{base: base}
}

func (c *importClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() {
		return c.at
	}
	return c.base()
}

// pin makes the clock read t until the next pin; the zero time returns it
// to the current time.
func (c *importClock) pin(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}
