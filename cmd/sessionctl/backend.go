package main

// The choice of backend: --db is a SQLite file path, or a postgres:// (or
// postgresql://) URL for PostgreSQL. Every command works on store.Store
// plus the schema version both backends report; the maintenance commands
// that need the database engine itself call sqlstore's and pgstore's
// functions for it (maint.go, pgmaint.go).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// cliStore is what sessionctl needs of a store: every facet, and the
// applied and latest schema versions.
type cliStore interface {
	store.Store
	// RestoreRecords puts exported records back exactly, in one
	// transaction (import).
	store.RecordRestorer
	// Counts counts every facet in one read transaction (stats).
	store.Counter
	// Searcher finds items by their text and rebuilds the search index
	// (search, reindex, doctor).
	store.Searcher
	// SchemaVersion returns the database's applied schema version and the
	// latest version this binary knows.
	SchemaVersion(ctx context.Context) (current, latest int64, err error)
}

var (
	_ cliStore = (*sqlstore.Store)(nil)
	_ cliStore = (*pgstore.Store)(nil)
)

// isPG reports whether --db names a PostgreSQL database.
func (g *globals) isPG() bool { return pgstore.IsURL(g.db) }

// dbName is --db as sessionctl prints it: a URL's password is replaced by
// "xxxxx".
func (g *globals) dbName() string {
	if !g.isPG() {
		return g.db
	}
	return pgstore.Redact(g.db)
}

// errNoStore says that a PostgreSQL schema holds no session store; read
// and maintenance commands never create one.
type errNoStore struct{ db, schema string }

func (e *errNoStore) Error() string {
	return fmt.Sprintf("database %s has no session store in schema %s (create one with sessionctl create, import, demo or migrate up)", e.db, e.schema)
}

// mustExist checks, without creating anything, that the database exists:
// the SQLite file, or the store's version table in the PostgreSQL schema.
func (g *globals) mustExist(ctx context.Context) error {
	if !g.isPG() {
		return g.mustExistFile()
	}
	p, err := g.pgProbe(ctx)
	if err != nil {
		return err
	}
	if !p.HasStore {
		return &errNoStore{db: g.dbName(), schema: p.Schema}
	}
	return nil
}

// openExisting opens the store at --db, which must exist.
func (g *globals) openExisting(ctx context.Context) (cliStore, error) {
	if err := g.mustExist(ctx); err != nil {
		return nil, err
	}
	return g.openOrCreate(ctx)
}

// openOrCreate opens the store at --db, creating the file (or the store's
// tables in the PostgreSQL schema) when missing.
func (g *globals) openOrCreate(ctx context.Context) (cliStore, error) {
	var st cliStore
	var err error
	if g.isPG() {
		st, err = pgstore.Open(ctx, g.db, g.pgOptions()...)
	} else {
		st, err = sqlstore.Open(ctx, g.db, g.sqliteStoreOptions()...)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", g.dbName(), err)
	}
	if g.tenant != "" {
		return tenantStore(ctx, st, g.tenant, tenantMayBeNew(g.command))
	}
	return st, nil
}

// openOrCreateUndo is openOrCreate for a command that may create the
// store but must leave nothing behind when it fails (import, create). It
// also returns undo, for the failure: undo closes st and removes what
// this call created — the SQLite file with the files beside it, and the
// keyring directory — unless another process holds the database by then
// (it is theirs too: nothing is removed). A keyring directory created
// beside a database that existed is removed only when it holds no key.
// On PostgreSQL undo only closes the store: the tables of a new store
// stay (the schema is the operator's).
func (g *globals) openOrCreateUndo(ctx context.Context) (st cliStore, undo func(), err error) {
	if g.isPG() {
		st, err = g.openOrCreate(ctx)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	newDB := !pathExists(g.db)
	ring := ""
	if p, _ := g.keyProvider(); p != nil {
		ring = g.keyringDir()
	}
	newRing := ring != "" && !pathExists(ring)
	remove := func() {
		// sqlstore.Remove removes nothing while another process holds
		// the database, and the writer lock last.
		if newDB && sqlstore.Remove(g.db) != nil {
			return
		}
		if !newRing {
			return
		}
		if newDB {
			_ = os.RemoveAll(ring)
			return
		}
		if ents, err := os.ReadDir(ring); err == nil && len(ents) <= 1 {
			_ = os.Remove(filepath.Join(ring, ".shredded")) // keys the failed command made and shredded
			_ = os.Remove(ring)
		}
	}
	st, err = g.openOrCreate(ctx)
	if err != nil {
		remove()
		return nil, nil, err
	}
	return st, func() { st.Close(); remove() }, nil
}

// pathExists reports whether something exists at path (an error other
// than "does not exist" counts as existing: nothing is removed then).
func pathExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// errNotOnPostgres is the error of a command (or flag) that only makes
// sense on a SQLite file.
func errNotOnPostgres(what, instead string) error {
	return errors.New(what + " is not supported on PostgreSQL: " + instead)
}

// pgSchemaHint names the store's schema as the URL sets it (the first entry
// of search_path), else "public", for the advice of an error message.
func (g *globals) pgSchemaHint() string {
	u, err := url.Parse(g.db)
	if err != nil {
		return "public"
	}
	first, _, _ := strings.Cut(u.Query().Get("search_path"), ",")
	if first = strings.TrimSpace(first); first == "" || strings.HasPrefix(first, "$") {
		return "public"
	}
	return clitext.ShellQuote(first)
}
