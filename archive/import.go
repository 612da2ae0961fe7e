package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

// MaxA3SBytes bounds one a3s session file, which is read whole (export
// documents are read one item at a time and have no bound).
const MaxA3SBytes = 512 << 20

// ImportOptions are the choices of an import.
type ImportOptions struct {
	// SkipExisting leaves a record whose id exists (and state keys
	// stored with another value) untouched instead of failing the import
	// with ErrConflict.
	SkipExisting bool
	// DryRun parses and validates the whole file and changes nothing.
	// With a store, it checks the file against it as the import would:
	// every record is written in the import's transaction, which is then
	// rolled back (the data keys it made for encrypted records are
	// shredded), so a record that exists is a conflict (or, with
	// SkipExisting, skipped) exactly where the import would find one; the
	// store's write lock is held meanwhile, as during an import. The store
	// may be nil: then only the file itself is checked.
	DryRun bool
	// Progress, when set, is called after every record and every read.
	Progress func(ImportProgress)
	// Keys is the keyring that holds the data keys of the sealed sessions
	// of the document (see sealed.go); without it a sealed session fails
	// the import (store.ErrKeyUnavailable) and nothing is imported.
	Keys store.KeyRing
	// Tenant, when set, restores the document's rows to that tenant: a
	// document of the default tenant (of any version) or of one tenant
	// (ExportOptions.Tenant), every facet's section included (each facet
	// is scoped by tenant handles). A document with several tenants' rows
	// (a "tenants" part, as a whole export writes when the store has
	// tenants) is refused then (ErrInvalidInput, unless a section before
	// that part fails first), and nothing is imported: export one tenant
	// to import it into another.
	Tenant string
}

// ImportProgress is where an import is.
type ImportProgress struct {
	// Counts are the items imported so far.
	Counts Counts
	// Skipped counts the existing records left alone (SkipExisting).
	Skipped int64
	// Read counts the bytes of the file read so far, of Size (0 when not
	// known).
	Read, Size int64
}

// ImportResult is what an import restored.
type ImportResult struct {
	Counts
	// Skipped counts the existing records left alone (SkipExisting).
	Skipped int64 `json:"skipped"`
}

// importer is the import of one file in progress: the writer of its
// transaction (nil in a dry run) and what it counted.
type importer struct {
	w       store.RecordWriter
	skip    bool
	counts  Counts
	skipped int64
	// tick, when not nil, is called after every record counted.
	tick func()
	keys store.KeyRing // sealed.go
	// into is ImportOptions.Tenant; tenant the tenant whose records are
	// being restored ("" for the default).
	into, tenant string
}

// Import restores the export document (or a3s session file) that r holds
// into st, in one transaction: completely or not at all — a bad record, a
// record that exists (unless SkipExisting) or a killed process leaves
// nothing of it. An export document is read one item at a time, so its
// size is not bounded by memory. r is read from its start again if the
// store runs the transaction again; a reader that cannot seek is first
// copied to a temporary file. Invalid documents are ErrInvalidInput; a
// version newer than Version is refused as such.
func Import(ctx context.Context, st Store, r io.Reader, opts ImportOptions) (ImportResult, error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		tmp, err := spool(r)
		if err != nil {
			return ImportResult{}, err
		}
		defer func() {
			tmp.Close()
			os.Remove(tmp.Name())
		}()
		rs = tmp
	}
	size, err := rs.Seek(0, io.SeekEnd)
	if err != nil {
		size = 0
	}
	return importSeeker(ctx, st, rs, size, opts)
}

// ImportFile imports the file at path (see Import).
func ImportFile(ctx context.Context, st Store, path string, opts ImportOptions) (ImportResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportResult{}, err
	}
	defer f.Close()
	return Import(ctx, st, f, opts)
}

// spool copies r to a temporary file, open for reading.
func spool(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "sessionstore-import-*.json")
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("read the file to import: %w", err)
	}
	return f, nil
}

func importSeeker(ctx context.Context, st Store, r io.ReadSeeker, size int64, opts ImportOptions) (ImportResult, error) {
	all, err := allSections()
	if err != nil {
		return ImportResult{}, err
	}
	if st == nil && !opts.DryRun {
		return ImportResult{}, store.Invalid("store", "must not be nil (except in a dry run)")
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return ImportResult{}, err
	}
	export := isExportStream(r)
	var x *importer
	run := func(w store.RecordWriter) error {
		x = &importer{w: w, skip: opts.SkipExisting, keys: opts.Keys, into: opts.Tenant}
		if opts.Tenant != "" {
			if err := x.forTenant(opts.Tenant); err != nil {
				return err
			}
		}
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return err
		}
		in := &countingReader{r: r}
		if opts.Progress != nil {
			// After every record, and every read: a large a3s file is
			// read whole before its one record.
			x.tick = func() {
				opts.Progress(ImportProgress{Counts: x.counts, Skipped: x.skipped, Read: in.n, Size: size})
			}
			in.after = x.tick
		}
		if export {
			return importStream(ctx, x, all, newJSONIn(in))
		}
		return importWhole(ctx, x, all, in)
	}
	switch {
	case opts.DryRun && st == nil:
		err = run(nil)
	case opts.DryRun:
		err = st.RestoreRecords(ctx, func(w store.RecordWriter) error {
			if err := run(w); err != nil {
				return err
			}
			return errDryRun // roll back what the check wrote
		})
		if errors.Is(err, errDryRun) {
			err = nil
		}
	default:
		err = st.RestoreRecords(ctx, run)
	}
	if err != nil {
		return ImportResult{}, err
	}
	return ImportResult{Counts: x.counts, Skipped: x.skipped}, nil
}

// errDryRun ends the transaction of a dry run with a store, which must
// not commit.
var errDryRun = errors.New("archive: dry run (rolled back)")

// put writes one record through fn and counts it in counter; a record
// that exists is skipped with SkipExisting, else a conflict. In a dry run
// it only counts.
func (x *importer) put(counter *int64, what string, fn func(w store.RecordWriter) (bool, error)) error {
	if x.tick != nil {
		defer x.tick()
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
// value conflict, unless SkipExisting keeps them.
func (x *importer) putState(scope, owner string, fn func(w store.RecordWriter) ([]string, error)) error {
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

// isExportStream reports whether r holds a JSON object whose first key is
// "format", as Export writes it: such a file is read one item at a time.
// Anything else is read whole (importWhole). It leaves r anywhere.
func isExportStream(r io.Reader) bool {
	in := newJSONIn(r)
	if ok, err := in.delim('{', false); err != nil || !ok {
		return false // importWhole says what is wrong
	}
	k, _, err := in.key()
	return err == nil && k == "format"
}

// checkHead checks a document's format and version.
func checkHead(format string, version int) error {
	if format != Format {
		return store.Invalid("format", fmt.Sprintf("unknown format %q (this binary reads %s and a3s session files)", format, Format))
	}
	if version < 1 || version > Version {
		return store.Invalid("version", fmt.Sprintf("export version %d is not supported (this binary reads 1 to %d)", version, Version))
	}
	return nil
}

// importStream reads an export document one item at a time: its format
// and version first, then each facet's section.
func importStream(ctx context.Context, x *importer, all []registered, in *jsonIn) error {
	if _, err := in.delim('{', false); err != nil {
		return store.Invalid("file", "not a JSON object: "+err.Error())
	}
	var format string
	version, sections := 0, 0
	tenantsDone := false
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
			if format != Format {
				return checkHead(format, Version)
			}
			continue
		case "version":
			if err := in.decode(&version); err != nil {
				return err
			}
			if err := checkHead(Format, version); err != nil {
				return err
			}
			continue
		case "exported_at":
			var s string
			if err := in.decode(&s); err != nil {
				return err
			}
			continue
		case "tenant":
			if err := x.headTenant(in, version, sections); err != nil {
				return err
			}
			continue
		case "tenants":
			if err := restoreTenants(ctx, x, all, in, version); err != nil {
				return err
			}
			tenantsDone = true
			continue
		}
		if tenantsDone {
			return store.Invalid("file", fmt.Sprintf("section %q after the tenants part (which comes last)", k))
		}
		restore := restoreOf(all, k)
		if x.tenant != "" {
			restore = restoreOfTenant(all, k)
			if restore == nil && restoreOf(all, k) != nil {
				if err := emptySection(in, k); err != nil {
					return err
				}
				sections++
				continue
			}
		}
		if restore == nil {
			return store.Invalid("file", fmt.Sprintf("unknown field %q", k))
		}
		if format == "" || version == 0 {
			return store.Invalid("file", fmt.Sprintf("format and version must come before %q (as sessionctl export writes them)", k))
		}
		if err := restore(ctx, x, in, version); err != nil {
			return err
		}
		sections++
	}
	if format == "" || version == 0 {
		return store.Invalid("file", "format or version missing")
	}
	return in.end()
}

// importDocument imports an export document held in memory, whose keys
// may come in any order (a tool rewrote it): its sections are restored in
// registry order.
func importDocument(ctx context.Context, x *importer, all []registered, data []byte) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return store.Invalid("file", "not a JSON object: "+jsonErr(err))
	}
	known := map[string]bool{"format": true, "version": true, "exported_at": true, "tenant": true, "tenants": true}
	for _, f := range all {
		known[f.key] = true
		for k := range f.more {
			known[k] = true
		}
	}
	for k := range doc {
		if !known[k] {
			return store.Invalid("file", fmt.Sprintf("unknown field %q", k))
		}
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	h, _ := json.Marshal(map[string]json.RawMessage{"format": doc["format"], "version": doc["version"]})
	if err := json.Unmarshal(h, &head); err != nil {
		return store.Invalid("file", jsonErr(err))
	}
	if err := checkHead(head.Format, head.Version); err != nil {
		return err
	}
	if raw, ok := doc["tenant"]; ok {
		if err := x.headTenant(newJSONIn(bytes.NewReader(raw)), head.Version, 0); err != nil {
			return err
		}
	}
	for _, f := range all {
		for _, k := range append([]string{f.key}, slices.Sorted(maps.Keys(f.more))...) {
			raw, ok := doc[k]
			if !ok {
				continue
			}
			in := newJSONIn(bytes.NewReader(raw))
			restore := restoreOf(all, k)
			if x.tenant != "" && !tenantScoped(f) {
				restore = func(_ context.Context, _ *importer, in *jsonIn, _ int) error { return emptySection(in, k) }
			}
			if err := restore(ctx, x, in, head.Version); err != nil {
				return err
			}
			if err := in.end(); err != nil {
				return err
			}
		}
	}
	// The tenants last, as in a document read one item at a time.
	if raw, ok := doc["tenants"]; ok {
		in := newJSONIn(bytes.NewReader(raw))
		if err := restoreTenants(ctx, x, all, in, head.Version); err != nil {
			return err
		}
		return in.end()
	}
	return nil
}

// importWhole reads a file that is not an export stream whole: an a3s
// session file, or an export document whose first key is not "format"
// (read from memory then).
func importWhole(ctx context.Context, x *importer, all []registered, r io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(r, MaxA3SBytes+1))
	if err != nil {
		return err
	}
	if len(data) > MaxA3SBytes {
		return store.Invalid("file", "larger than 512.0 MiB (an export file of any size is read when it begins with its \"format\" key)")
	}
	var head struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return store.Invalid("file", "not a JSON object: "+jsonErr(err))
	}
	switch head.Format {
	case Format:
		return importDocument(ctx, x, all, data)
	case "":
		c, err := a3s.Decode(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("neither a %s file nor an a3s session file: %w", Format, asInvalid(err))
		}
		cx := Conversation{Conversation: c}
		if err := cx.Validate("a3s"); err != nil {
			return err
		}
		return x.putConversation(cx)
	}
	return checkHead(head.Format, Version)
}
