package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// maxImportBytes bounds one import file.
const maxImportBytes = 512 << 20

var importSpec = spec{
	name: "import",
	args: "FILE...",
	about: `Imports sessions from files ("-" reads stdin) of two formats, told apart by
their content:

  - "sessionctl export" files: governed sessions are restored in one
    transaction exactly as exported (counters, rate window, status, times);
    runtime sessions with their overrides and uploads (each checked against
    its SHA-256; times and turn state start afresh); conversations come
    back with their messages, cost records, artifacts, trace events, run
    records and reports (message positions renumbered from 0, trace events
    and reports stamped with the import time);
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
	Files         int   `json:"files"`
	Governed      int64 `json:"governed_sessions"`
	Runtime       int64 `json:"runtime_sessions"`
	Conversations int64 `json:"conversations"`
	Skipped       int64 `json:"skipped"`
	DryRun        bool  `json:"dry_run"`
}

// importFile is one parsed and validated input file.
type importFile struct {
	governed      []store.Session
	runtime       []rtImport
	conversations []convExport
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
		if err == nil && *dryRun {
			doc.Governed += int64(len(f.governed))
			doc.Runtime += int64(len(f.runtime))
			doc.Conversations += int64(len(f.conversations))
		} else if err == nil {
			err = importOne(ctx, st, f, *skip, &doc)
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
	fmt.Fprintf(g.stdout, "%s %s from %d %s", verb, countsText(doc.Governed, doc.Runtime, doc.Conversations),
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
		c, err := store.DecodeA3S(bytes.NewReader(data))
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

// importOne writes one validated file: it checks first that no runtime
// session or conversation id exists (or drops those with skip), then
// restores the governed sessions in one transaction, then inserts the
// runtime sessions and saves the conversations.
func importOne(ctx context.Context, st *sqlstore.Store, f importFile, skip bool, doc *importJSON) error {
	conv, rt := st.Conversations(), st.Runtime()
	var rts []rtImport
	for _, x := range f.runtime {
		_, err := rt.Get(ctx, x.req.ID)
		switch {
		case err == nil && !skip:
			return fmt.Errorf("%w: runtime session %s exists (use --skip-existing)", store.ErrConflict, x.req.ID)
		case err == nil:
			doc.Skipped++
		case errors.Is(err, store.ErrNotFound):
			rts = append(rts, x)
		default:
			return err
		}
	}
	var convs []convExport
	for _, x := range f.conversations {
		exists, err := conv.Exists(ctx, x.Conversation.ID)
		if err != nil {
			return err
		}
		if exists && !skip {
			return fmt.Errorf("%w: conversation %s exists (use --skip-existing)", store.ErrConflict, x.Conversation.ID)
		}
		if exists {
			doc.Skipped++
			continue
		}
		convs = append(convs, x)
	}
	if len(f.governed) > 0 {
		n, err := st.Governance().(*sqlstore.Governance).Restore(ctx, store.RestoreRequest{Sessions: f.governed, SkipExisting: skip})
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: a governed session id in the file exists (use --skip-existing)", err)
		}
		if err != nil {
			return err
		}
		doc.Governed += n
		doc.Skipped += int64(len(f.governed)) - n
	}
	for _, x := range rts {
		if err := importRuntime(ctx, rt, x); err != nil {
			return fmt.Errorf("runtime session %s: %w", x.req.ID, err)
		}
		doc.Runtime++
	}
	for _, x := range convs {
		if err := importConversation(ctx, conv, x); err != nil {
			return fmt.Errorf("conversation %s: %w", x.Conversation.ID, err)
		}
		doc.Conversations++
	}
	return nil
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
	seenRT := map[string]bool{}
	for i := range doc.Runtime {
		imp, err := doc.Runtime[i].validate(fmt.Sprintf("runtime_sessions[%d]", i))
		if err != nil {
			return importFile{}, err
		}
		if seenRT[imp.req.ID] {
			return importFile{}, store.Invalid("runtime_sessions", "id "+imp.req.ID+" appears twice")
		}
		seenRT[imp.req.ID] = true
		f.runtime = append(f.runtime, imp)
	}
	seen := map[string]bool{}
	for i := range doc.Conversations {
		x := &doc.Conversations[i]
		if err := x.validate(fmt.Sprintf("conversations[%d]", i)); err != nil {
			return importFile{}, err
		}
		if seen[x.Conversation.ID] {
			return importFile{}, store.Invalid("conversations", "id "+x.Conversation.ID+" appears twice")
		}
		seen[x.Conversation.ID] = true
		x.Artifacts, x.Traces = nonNilSlice(x.Artifacts), nonNilSlice(x.Traces)
		f.conversations = append(f.conversations, *x)
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

// countsText is "2 governed sessions, 1 runtime session and 3
// conversations", leaving out the zeros ("nothing" when all are).
func countsText(governed, runtime, conversations int64) string {
	var parts []string
	if governed > 0 {
		parts = append(parts, fmt.Sprintf("%d governed %s", governed, plural(int(governed), "session", "sessions")))
	}
	if runtime > 0 {
		parts = append(parts, fmt.Sprintf("%d runtime %s", runtime, plural(int(runtime), "session", "sessions")))
	}
	if conversations > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", conversations, plural(int(conversations), "conversation", "conversations")))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return joinAnd(parts)
}

// joinAnd lists words: "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
