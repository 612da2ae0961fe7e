package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// ExportOptions are the choices of an export.
type ExportOptions struct {
	// IDs selects what to export (empty: everything). An id selects the
	// governed session, runtime session and conversation of that id, the
	// agent sessions of that session id in any application and user, and
	// the audit chains of the agents of the selected governed sessions.
	// An id that names nothing fails the export before anything is
	// written.
	IDs []string
	// Now is the document's "exported_at" (zero: time.Now()).
	Now time.Time
	// Progress, when set, is called at the start of every section and
	// after every item written (the caller throttles what it shows).
	Progress func(ExportProgress)
	// Keys is the keyring of the store's encrypted sessions: they are
	// exported sealed with their own data keys (see sealed.go); without
	// it an encrypted session fails the export (store.ErrKeyUnavailable).
	Keys store.KeyRing
	// DefaultTenantOnly writes the default tenant's rows alone: the
	// document has no "tenants" part (see tenants.go).
	DefaultTenantOnly bool
	// Tenant, when set, exports that tenant's rows alone (of the facets a
	// tenant handle scopes: governed sessions with their spend, runtime
	// sessions with their uploads, conversations, agent sessions and
	// audit chains): the document's head names the tenant,
	// and an import restores its rows to that tenant (or to the tenant
	// ImportOptions.Tenant names). Without it, an export writes the
	// default tenant's rows and then every other tenant's (version 6).
	Tenant string
}

// ExportProgress is where an export is.
type ExportProgress struct {
	// Section is the title of the facet being written ("governed
	// sessions"), "" once the last section is done.
	Section string
	// Done counts the items of the section written so far.
	Done int64
	// Bytes counts the bytes of the document written so far.
	Bytes int64
}

// exporter is one export in progress.
type exporter struct {
	st      store.Store
	ids     []string // nil: everything
	out     *jsonOut
	written *countingWriter
	counts  Counts
	// section and done say where the export is, for progress.
	section  string
	done     *int64
	progress func(ExportProgress)
	keys     store.KeyRing // sealed.go
	// tenant names the one tenant whose rows the document holds ("": the
	// default's); tenants asks for every other tenant's part after them.
	tenant  string
	tenants bool
}

// Export writes every facet of st (or what opts.IDs selects) to w as one
// export document, and returns what it wrote. Everything is read from one
// read snapshot of st (store.Snapshotter): the document is the state of
// one instant, however long it takes and whatever is written meanwhile,
// and so always imports. It writes one item at a time, so its memory does
// not grow with the database. On an error, w holds a partial document.
func Export(ctx context.Context, st store.Store, w io.Writer, opts ExportOptions) (Counts, error) {
	all, err := allSections()
	if err != nil {
		return Counts{}, err
	}
	for _, id := range opts.IDs {
		if err := store.ValidateID("id", id); err != nil {
			return Counts{}, err
		}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	x := &exporter{st: st, progress: opts.Progress, keys: opts.Keys, tenant: opts.Tenant,
		tenants: opts.Tenant == "" && !opts.DefaultTenantOnly && len(opts.IDs) == 0}
	if len(opts.IDs) > 0 {
		x.ids = slices.Clone(opts.IDs)
	}
	if opts.Tenant != "" {
		if x.st, err = tenantOf(st, opts.Tenant); err != nil {
			return Counts{}, err
		}
	}
	err = st.ReadSnapshot(ctx, func(ctx context.Context) error {
		if x.ids != nil {
			// Every id must name something before anything is written.
			if err := x.checkIDs(ctx); err != nil {
				return err
			}
		}
		return x.write(ctx, all, w, opts.Now)
	})
	return x.counts, err
}

// ExportFile exports to a new file at path (see Export): the document is
// written to a temporary file beside it (mode 0600: it holds every
// conversation of the store), synced, and linked into place, failing if
// path exists by then; then the directory is synced. path never holds a
// partial document.
func ExportFile(ctx context.Context, st store.Store, path string, opts ExportOptions) (counts Counts, err error) {
	if path == "" {
		return Counts{}, store.Invalid("path", "must not be empty")
	}
	if _, err := os.Lstat(path); err == nil {
		return Counts{}, fmt.Errorf("%s exists: remove it or choose another name", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".export-*")
	if err != nil {
		return Counts{}, err
	}
	tmp := f.Name()
	defer func() {
		f.Close()
		os.Remove(tmp)
	}()
	if err := f.Chmod(0o600); err != nil {
		return Counts{}, err
	}
	if counts, err = Export(ctx, st, f, opts); err != nil {
		return counts, err
	}
	if err := f.Sync(); err != nil {
		return counts, err
	}
	if err := os.Link(tmp, path); err != nil {
		return counts, err
	}
	return counts, syncDir(filepath.Dir(path))
}

// syncDir syncs a directory, so that a file linked into it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil // directories cannot be synced on this platform
	}
	return err
}

// write streams the document to w, facet by facet in registry order, one
// item at a time.
func (x *exporter) write(ctx context.Context, all []registered, w io.Writer, now time.Time) error {
	x.written = &countingWriter{w: w}
	x.out = newJSONOut(x.written)
	x.out.open("", '{')
	x.out.value("format", Format)
	x.out.value("version", Version)
	x.out.value("exported_at", now.UTC().Format(time.RFC3339Nano))
	if x.tenant != "" {
		x.out.value("tenant", x.tenant)
	}
	if err := x.writeSections(ctx, all, x.tenant != ""); err != nil {
		return err
	}
	if x.tenants {
		if err := x.writeTenants(ctx, all); err != nil {
			return err
		}
	}
	x.out.close('}')
	x.section, x.done = "", nil
	err := x.out.finish()
	x.report()
	return err
}

// tick reports one more item written.
func (x *exporter) tick() {
	if x.done != nil {
		*x.done++
	}
	x.report()
}

// report calls the progress callback.
func (x *exporter) report() {
	if x.progress == nil {
		return
	}
	p := ExportProgress{Section: x.section, Bytes: x.written.n + int64(x.out.w.Buffered())}
	if x.done != nil {
		p.Done = *x.done
	}
	x.progress(p)
}

// wants reports whether id is selected.
func (x *exporter) wants(id string) bool {
	return x.ids == nil || slices.Contains(x.ids, id)
}

// checkIDs fails on the first id that no facet has.
func (x *exporter) checkIDs(ctx context.Context) error {
	found := map[string]bool{}
	for _, id := range x.ids {
		if _, err := x.st.Governance().Get(ctx, id); err == nil {
			found[id] = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := x.st.Runtime().Get(ctx, id); err == nil {
			found[id] = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ok, err := x.st.Conversations().Exists(ctx, id)
		if err != nil {
			return err
		}
		found[id] = found[id] || ok
	}
	if slices.ContainsFunc(x.ids, func(id string) bool { return !found[id] }) {
		err := eachAgentSession(ctx, x.st.AgentSessions(), func(s store.AgentSession) error {
			if slices.Contains(x.ids, s.Key.Session) {
				found[s.Key.Session] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range x.ids {
		if !found[id] {
			return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
		}
	}
	return nil
}

// items writes the section key as an array of the items of the selected
// ids (x.ids), or of every id that list pages through: read reads one
// (ErrNotFound: the id is not of this facet, and is left out).
func items[T any](ctx context.Context, x *exporter, key string, list func(cursor string) (store.Page[string], error),
	read func(ctx context.Context, id string) (T, error)) error {
	x.out.open(key, '[')
	defer x.out.close(']')
	add := func(id string) error {
		item, err := read(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		x.out.value("", item)
		x.tick()
		return x.out.err
	}
	if x.ids != nil {
		for _, id := range x.ids {
			if err := add(id); err != nil {
				return err
			}
		}
		return nil
	}
	cursor := ""
	for {
		page, err := list(cursor)
		if err != nil {
			return err
		}
		for _, id := range page.Items {
			if err := add(id); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}
