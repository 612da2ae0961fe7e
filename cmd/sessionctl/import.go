package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

// maxA3SBytes bounds one a3s session file, which is read whole (export
// files are read one item at a time and have no bound).
const maxA3SBytes = 512 << 20

var importSpec = spec{
	name: "import",
	args: "FILE...",
	about: `Imports sessions from files ("-" reads stdin) of two formats, told apart by
their content:

  - "sessionctl export" files (versions 1 to 3): every record comes back
    exactly as exported — governed sessions with their counters, rate
    window, status and times; runtime sessions with their times,
    overrides, uploads (each checked against its SHA-256) and turn
    generation (the turn is no longer running: it belonged to the process
    that ran it); conversations with their version, message positions and
    times, cost records, artifacts, trace events, run records and reports;
    agent sessions with their version, times, session state and event
    logs, and the app and user state they share (a stored state key with
    another value is a conflict, like an existing id); audit chains whole,
    each checked to verify and end at its head (an agent with a chain is
    a conflict, like an existing id);
  - a3s session files (the JSON the a3s-code file store writes per
    session), as conversations; an "api_key" in them is never stored.

Each file is imported in one transaction, read one item at a time: it is
imported completely or not at all — a bad record, an id that already
exists (unless --skip-existing) or a killed process leaves nothing of it,
and running the import again imports it whole. Files are imported in
order; the first bad file stops the import (the files before it stay
imported) — use --dry-run to check every file first. Other writers wait
while a file is imported (on SQLite the write lock is held). Creates the
database file when it does not exist. When stderr is a terminal, a status
line shows the file being imported, the records imported so far and the
bytes read of the file.`,
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

// importRun is the import of one file in progress: the writer of its
// transaction (nil in a dry run) and what it counted.
type importRun struct {
	w       store.RecordWriter
	skip    bool
	counts  facetCounts
	skipped int64
	// tick, when not nil, is called after every record counted (the
	// status line).
	tick func(x *importRun)
}

// put writes one record through fn and counts it in counter; a record
// that exists is skipped with --skip-existing, else a conflict. In a dry
// run it only counts.
func (x *importRun) put(counter *int64, what string, fn func(w store.RecordWriter) (bool, error)) error {
	if x.tick != nil {
		defer x.tick(x)
	}
	if x.w == nil {
		*counter++
		return nil
	}
	ok, err := fn(x.w)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case ok:
		*counter++
	case x.skip:
		x.skipped++
	default:
		return fmt.Errorf("%w: %s exists (use --skip-existing)", store.ErrConflict, what)
	}
	return nil
}

// putState writes app or user state through fn: keys stored with another
// value conflict, unless --skip-existing keeps them.
func (x *importRun) putState(scope, owner string, fn func(w store.RecordWriter) ([]string, error)) error {
	if x.w == nil {
		return nil
	}
	differing, err := fn(x.w)
	if err != nil {
		return fmt.Errorf("%s state of %s: %w", scope, owner, err)
	}
	if len(differing) > 0 && !x.skip {
		return fmt.Errorf("%w: %s state key %q of %s exists with another value (use --skip-existing)", store.ErrConflict, scope, differing[0], owner)
	}
	return nil
}

func runImport(ctx context.Context, g *globals, args []string) error {
	sp := importSpec
	fs := g.newFlags(sp)
	skip := fs.Bool("skip-existing", false, "leave sessions whose id exists untouched instead of failing")
	dryRun := fs.Bool("dry-run", false, "parse and validate every file, write nothing")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 1, -1); err != nil {
		return err
	}
	all, err := registeredFacets()
	if err != nil {
		return g.fail(sp.name, err)
	}
	var st cliStore
	if !*dryRun {
		if st, err = g.openOrCreate(ctx); err != nil {
			return g.fail(sp.name, err)
		}
		defer st.Close()
	}
	p := g.startProgress(true)
	doc := importJSON{DryRun: *dryRun}
	for i, name := range pos {
		label := esc(filepath.Base(name)) // the line is short; the user gave the path
		if name == "-" {
			label = "stdin"
		}
		if len(pos) > 1 {
			label = fmt.Sprintf("%d/%d %s", i+1, len(pos), label)
		}
		if *dryRun {
			label = "checking " + label
		} else {
			label = "importing " + label
		}
		// Throttled like every update: many small files must not redraw
		// the line for each.
		p.update(func() string { return label })
		x, err := importFile(ctx, g, st, all, name, *skip, importStatus(p, label))
		if err != nil {
			if doc.Files > 0 {
				err = fmt.Errorf("%w (the %d %s before it %s imported)", err, doc.Files, plural(doc.Files, "file", "files"), plural(doc.Files, "was", "were"))
			}
			return g.fail(sp.name, fmt.Errorf("%s: %w", name, err))
		}
		for _, f := range all {
			*f.ops.count(&doc.facetCounts) += *f.ops.count(&x.counts)
		}
		doc.Skipped += x.skipped
		doc.Files++
	}
	p.clear()
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return nil
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
	return nil
}

// importFile imports one file ("-" is stdin, first copied to a temporary
// file) in one transaction of st, or checks it when st is nil (dry run).
// The file is read one item at a time, inside the transaction; a
// transaction the store runs again reads it again from the start.
func importFile(ctx context.Context, g *globals, st cliStore, all []registered, name string, skip bool, status func(x *importRun, read, size int64)) (*importRun, error) {
	path := name
	if name == "-" {
		g.status.show("reading stdin")
		tmp, err := spoolStdin(g)
		if err != nil {
			return nil, err
		}
		defer os.Remove(tmp)
		path = tmp
	}
	export, err := isExportStream(path)
	if err != nil {
		return nil, err
	}
	size := fileSize(path)
	var x *importRun
	run := func(w store.RecordWriter) error {
		x = &importRun{w: w, skip: skip}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in := &countingReader{r: f}
		if status != nil {
			// After every record, and every read: a large a3s file is
			// read whole before its one record.
			x.tick = func(x *importRun) { status(x, in.n, size) }
			in.after = func() { x.tick(x) }
		}
		if export {
			return importExport(ctx, x, all, newJSONIn(in))
		}
		return importWhole(ctx, x, all, in)
	}
	if st == nil {
		err = run(nil)
	} else {
		err = st.RestoreRecords(ctx, run)
	}
	return x, err
}

// spoolStdin copies stdin to a temporary file and returns its path.
func spoolStdin(g *globals) (string, error) {
	f, err := os.CreateTemp("", "sessionctl-import-*.json")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, g.stdin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("read stdin: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// isExportStream reports whether the file at path is a JSON object whose
// first key is "format", as sessionctl export writes it: such a file is
// read one item at a time. Anything else is read whole (importWhole).
func isExportStream(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	in := newJSONIn(f)
	if ok, err := in.delim('{', false); err != nil || !ok {
		return false, nil // importWhole says what is wrong
	}
	k, _, err := in.key()
	return err == nil && k == "format", nil
}

// importExport reads a sessionctl export document one item at a time: its
// format and version first, then each facet's section.
func importExport(ctx context.Context, x *importRun, all []registered, in *jsonIn) error {
	if _, err := in.delim('{', false); err != nil {
		return store.Invalid("file", "not a JSON object: "+err.Error())
	}
	var format string
	version := 0
	for {
		k, more, err := in.key()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch k {
		case "format":
			if err := in.decode(&format); err != nil {
				return err
			}
			if format != exportFormat {
				return store.Invalid("format", fmt.Sprintf("unknown format %q (this binary reads %s and a3s session files)", format, exportFormat))
			}
			continue
		case "version":
			if err := in.decode(&version); err != nil {
				return err
			}
			if version < 1 || version > exportVersion {
				return store.Invalid("version", fmt.Sprintf("export version %d is not supported (this binary reads 1 to %d)", version, exportVersion))
			}
			continue
		case "exported_at":
			var s string
			if err := in.decode(&s); err != nil {
				return err
			}
			continue
		}
		restore := sectionOf(all, k)
		if restore == nil {
			return store.Invalid("file", fmt.Sprintf("unknown field %q", k))
		}
		if format == "" || version == 0 {
			return store.Invalid("file", fmt.Sprintf("format and version must come before %q (as sessionctl export writes them)", k))
		}
		if err := restore(ctx, x, in, version); err != nil {
			return err
		}
	}
	if format == "" || version == 0 {
		return store.Invalid("file", "format or version missing")
	}
	return in.end()
}

// sectionOf returns the restore of the export section named k, nil for
// an unknown one.
func sectionOf(all []registered, k string) sectionRestore {
	for _, f := range all {
		if f.ops.section == k {
			return f.ops.restore
		}
		if r := f.ops.more[k]; r != nil {
			return r
		}
	}
	return nil
}

// importExportDoc imports an export document held in memory, whose keys
// may come in any order (a tool rewrote it): its sections are restored in
// registry order.
func importExportDoc(ctx context.Context, x *importRun, all []registered, data []byte) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return store.Invalid("file", "not a JSON object: "+jsonErr(err))
	}
	var head struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		ExportedAt string `json:"exported_at"`
	}
	known := map[string]bool{"format": true, "version": true, "exported_at": true}
	for _, f := range all {
		known[f.ops.section] = true
		for k := range f.ops.more {
			known[k] = true
		}
	}
	for k := range doc {
		if !known[k] {
			return store.Invalid("file", fmt.Sprintf("unknown field %q", k))
		}
	}
	h, _ := json.Marshal(map[string]json.RawMessage{"format": doc["format"], "version": doc["version"]})
	if err := json.Unmarshal(h, &head); err != nil {
		return store.Invalid("file", jsonErr(err))
	}
	if head.Version < 1 || head.Version > exportVersion {
		return store.Invalid("version", fmt.Sprintf("export version %d is not supported (this binary reads 1 to %d)", head.Version, exportVersion))
	}
	for _, f := range all {
		for _, k := range append([]string{f.ops.section}, slices.Sorted(maps.Keys(f.ops.more))...) {
			raw, ok := doc[k]
			if !ok {
				continue
			}
			in := newJSONIn(bytes.NewReader(raw))
			if err := sectionOf(all, k)(ctx, x, in, head.Version); err != nil {
				return err
			}
			if err := in.end(); err != nil {
				return err
			}
		}
	}
	return nil
}

// importWhole reads a file that is not an export stream whole: an a3s
// session file, or an export document whose first key is not "format"
// (read from memory then).
func importWhole(ctx context.Context, x *importRun, all []registered, r io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(r, maxA3SBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxA3SBytes {
		return store.Invalid("file", fmt.Sprintf("larger than %s (an export file of any size is read when it begins with its \"format\" key)", humanBytes(maxA3SBytes)))
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return store.Invalid("file", "not a JSON object: "+jsonErr(err))
	}
	switch head.Format {
	case exportFormat:
		return importExportDoc(ctx, x, all, data)
	case "":
		c, err := a3s.Decode(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("neither a %s file nor an a3s session file: %w", exportFormat, asInvalid(err))
		}
		cx := convExport{Conversation: c}
		if err := cx.validate("a3s"); err != nil {
			return err
		}
		return x.putConversation(cx)
	}
	return store.Invalid("format", fmt.Sprintf("unknown format %q (this binary reads %s and a3s session files)", head.Format, exportFormat))
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

// importStatus returns the status line's report of one file's import: the
// records imported so far (every facet's, skipped ones aside) and the
// bytes read of the file.
func importStatus(p *progress, label string) func(x *importRun, read, size int64) {
	if p == nil {
		return nil
	}
	return func(x *importRun, read, size int64) {
		p.update(func() string {
			c := x.counts
			n := c.Governed + c.Runtime + c.Conversations + c.AgentSessions + c.Audit
			return fmt.Sprintf("%s: %d %s, %s read", label, n, plural(int(n), "record", "records"), ofTotal(read, size))
		})
	}
}
