package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

const versionTable = migrations.TableName

// firstTable is created by migration 1: a database at version 1 or later
// without it is not a session store.
const firstTable = "governed_sessions"

// probe inspects an existing file before anything is allowed to write to it
// (a pragma such as journal_mode=WAL already would). It refuses empty
// files, files that are not SQLite databases, truncated databases,
// databases of other applications and schemas newer than this binary,
// without changing the file or creating files beside it. A missing file is
// fine: Open creates it.
func probe(ctx context.Context, path string, cfg *config) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlstore: %w: %w", store.ErrReadOnly, err)
	}
	if fi.IsDir() {
		return store.Invalid("path", "is a directory")
	}
	if fi.Size() == 0 {
		return fmt.Errorf("%w: the file is empty (remove it, or give a path that does not exist yet)", store.ErrNotSessionStore)
	}
	if err := checkHeader(path, fi.Size()); err != nil {
		return err
	}
	// Without a WAL file, nothing beyond the database file itself holds
	// data: read it as immutable, which creates no -wal or -shm file. That
	// read could race with a writer of another process that appears
	// meanwhile; a refusal therefore counts only if no WAL file appeared
	// and the database file did not change during the probe.
	if !fileExists(path + "-wal") {
		err := probeDSN(ctx, "file:"+escapePath(path)+"?mode=ro&immutable=1", cfg.busyTimeout)
		if err == nil {
			return nil
		}
		if fi2, serr := os.Stat(path); serr == nil && !fileExists(path+"-wal") &&
			fi2.Size() == fi.Size() && fi2.ModTime().Equal(fi.ModTime()) {
			return err
		}
	}
	return probeDSN(ctx, "file:"+escapePath(path)+"?mode=ro", cfg.busyTimeout)
}

// probeDSN runs checkSchema on a connection to dsn. The busy timeout
// matters: another process closing its last connection holds an exclusive
// lock for a moment (checkpoint, WAL removal), and without a timeout the
// probe fails at once with SQLITE_BUSY.
func probeDSN(ctx context.Context, dsn string, busyTimeout time.Duration) error {
	db, err := sql.Open(driverName, fmt.Sprintf("%s&_pragma=busy_timeout(%d)", dsn, busyTimeout.Milliseconds()))
	if err != nil {
		return mapErr(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return checkSchema(ctx, db)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader reads the 100-byte SQLite header of the file at path (size
// bytes long) and refuses what is not a database, or a database shorter
// than its header says. The size recorded in the header is trusted only
// when SQLite marks it valid, and is not checked while a non-empty WAL file
// exists (a checkpoint in progress may be extending the file).
func checkHeader(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sqlstore: %w: %w", store.ErrReadOnly, err)
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:16]) != sqliteMagic {
		return fmt.Errorf("%w: the file is not an SQLite database", store.ErrNotSessionStore)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return fmt.Errorf("%w: invalid page size %d in the database header", store.ErrCorrupt, pageSize)
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	sizeValid := binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil
	}
	if sizeValid && pages > 0 && size < pages*pageSize {
		return fmt.Errorf("%w: the file is truncated (%d bytes, its header says %d)", store.ErrCorrupt, size, pages*pageSize)
	}
	return nil
}

// createFresh creates a missing database file atomically: the schema is
// built in a temporary file beside it, which is then linked into place. A
// process that dies while creating leaves no half-made (empty) file at
// path, which Open would refuse, and processes racing to create the same
// file never see one another's partial work: the first link wins, the
// others use its file. Where hard links are not supported, the file is
// created in place, under the writer lock, by migrate.
func createFresh(ctx context.Context, path string, cfg *config) error {
	if fileExists(path) {
		return nil
	}
	tmp := fmt.Sprintf("%s.creating-%d-%d", path, os.Getpid(), rand.Uint64())
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(tmp + suffix)
		}
	}()
	// A new file is in incremental auto-vacuum mode (set before its first
	// table), so that a sweep can give free pages back in short steps
	// (Store.reclaim). An existing file is left as it is: setting the mode
	// takes a VACUUM (sessionctl gc --vacuum does it).
	//
	// The file is built at synchronous=OFF: no one else sees it before it
	// is linked into place, so its dozens of commits (one per migration)
	// need not each wait for the disk, and a crash leaves only a temporary
	// file, removed by the next creator. It is flushed once, whole, before
	// the link, and the directory after it: the store that Open returns is
	// on disk as at synchronous=FULL. (Each commit's fsync of the log was
	// 40 of its 48 fsyncs; the switch to WAL at its start still flushes,
	// the driver setting the pragmas before synchronous.)
	build := *cfg
	build.sync = SyncOff
	db, err := sql.Open(driverName, writeDSN(tmp, &build)+"&_pragma=auto_vacuum(2)")
	if err != nil {
		return mapErr(err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{cfg: build}
	err = s.migrateDB(ctx, db)
	if err == nil {
		err = checkpointFresh(ctx, db)
	}
	if cerr := db.Close(); err == nil {
		err = mapErr(cerr)
	}
	if err == nil {
		if serr := syncFile(tmp); serr != nil {
			err = fmt.Errorf("sqlstore: %w: flushing the new database: %w", store.ErrIO, serr)
		}
	}
	if err != nil {
		return err
	}
	// Only the file is linked into place: a log left beside it would be
	// removed with the temporary names, and the file without it is
	// damaged. checkpointFresh emptied it; this guards the assumption.
	if fi, err := os.Stat(tmp + "-wal"); err == nil && fi.Size() > 0 {
		return fmt.Errorf("sqlstore: %w: the new database's log was not written into it", store.ErrIO)
	}
	switch err := os.Link(tmp, path); {
	case err == nil:
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("sqlstore: %w: the new database is in place, but its directory could not be flushed: %w", store.ErrIO, err)
		}
	case errors.Is(err, fs.ErrExist):
		// Another process created it first: check what is there now.
		return probe(ctx, path, cfg)
	default:
		cfg.logger.Warn("sqlstore: cannot link a new database into place; creating it in place", "err", err)
	}
	return nil
}

// checkpointFresh writes a new database's log into its file and empties
// the log, so that the file alone is the database. The close of the last
// connection would try the same, but a failure there (the disk full) is
// not reported, and the file linked into place would lack the pages the
// log held: a damaged store instead of ErrStorageFull.
func checkpointFresh(ctx context.Context, db *sql.DB) error {
	var busy, logFrames, done int64
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return mapErr(err)
	}
	if busy != 0 {
		return fmt.Errorf("sqlstore: %w: the new database's log could not be written into it (%d of %d frames)", store.ErrBusy, done, logFrames)
	}
	return nil
}

// checkSchema refuses a database that is not a session store or whose
// schema is newer than this binary. A database without tables is fresh.
func checkSchema(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		if c := sqliteCode(err); c == 26 { // SQLITE_NOTADB
			return fmt.Errorf("%w: %w", store.ErrNotSessionStore, err)
		}
		return mapErr(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return mapErr(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return mapErr(err)
	}
	rows.Close()
	if len(tables) == 0 {
		return nil
	}
	hasVersion := false
	for _, t := range tables {
		if t == versionTable {
			hasVersion = true
		}
	}
	if !hasVersion {
		return fmt.Errorf("%w: the database has tables but no %s table", store.ErrNotSessionStore, versionTable)
	}
	current, err := dbVersion(ctx, db)
	if err != nil {
		return err
	}
	// goose_db_version is goose's default table name: another application
	// using goose has one too. Migration 1 creates firstTable; at version 0
	// (goose initialized, nothing applied) only the version table exists.
	if current == 0 && len(tables) > 1 || current >= 1 && !slices.Contains(tables, firstTable) {
		return fmt.Errorf("%w: the database has a %s table but not the session store's tables", store.ErrNotSessionStore, versionTable)
	}
	latest, err := migrations.Latest()
	if err != nil {
		return err
	}
	if current > latest {
		return &store.SchemaTooNewError{DatabaseVersion: current, BinaryVersion: latest}
	}
	missing, err := missingVersions(ctx, db, current)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: schema version %d is applied but migration(s) %v below it are not", store.ErrCorrupt, current, missing)
	}
	return nil
}

// missingVersions returns the migrations this binary knows, up to
// version upTo, that the database has not applied.
func missingVersions(ctx context.Context, db *sql.DB, upTo int64) ([]int64, error) {
	names, err := fs.Glob(migrations.SQLite(), "*.sql")
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT version_id FROM "+versionTable+" WHERE is_applied")
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, mapErr(err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	var missing []int64
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, err
		}
		if v <= upTo && !applied[v] {
			missing = append(missing, v)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// dbVersion returns the highest applied migration version (0 when none).
func dbVersion(ctx context.Context, db *sql.DB) (int64, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT max(version_id) FROM "+versionTable+" WHERE is_applied").Scan(&v)
	if err != nil {
		return 0, mapErr(err)
	}
	return v.Int64, nil
}

// migrate creates the file if needed (see createFresh) and brings its
// schema up to date. It runs under the writer file lock, so that of several
// processes opening a fresh file only the first creates and migrates it, on a pool of its own (goose holds a connection while it
// runs) whose transactions take SQLite's write lock at BEGIN.
//
// It returns that pool, opened with the write connection's settings
// (writeDSN), for Open to keep as the write connection: the connection
// that checked the schema has read it already, where a new one would
// parse the whole schema (some 140 tables, indexes and triggers) again,
// the largest part of opening a current store.
func (s *Store) migrate(ctx context.Context) (*sql.DB, error) {
	if s.lock != nil {
		if err := s.lock.lock(); err != nil {
			return nil, fmt.Errorf("sqlstore: writer file lock: %w", err)
		}
		defer s.lock.unlock()
	}
	if s.lock != nil {
		// Under the lock no other process is creating: temporary files
		// beside the database are leftovers of a creator that died.
		dir, base := filepath.Split(s.path)
		if ents, err := os.ReadDir(filepath.Clean(dir + ".")); err == nil {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), base+".creating-") {
					os.Remove(filepath.Join(dir, e.Name()))
				}
			}
		}
	}
	if err := createFresh(ctx, s.path, &s.cfg); err != nil {
		return nil, err
	}
	db, err := sql.Open(driverName, writeDSN(s.path, &s.cfg))
	if err != nil {
		return nil, mapErr(err)
	}
	db.SetMaxOpenConns(4)
	if err := checkSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrateDB(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// migrateDB applies pending migrations with a goose Provider. If another
// process migrated concurrently (no file lock), the version is re-read and
// an up-to-date database is accepted.
func (s *Store) migrateDB(ctx context.Context, db *sql.DB) error {
	latest, err := migrations.Latest()
	if err != nil {
		return err
	}
	p, err := migrations.NewSQLiteUpgradeProvider(db)
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	results, upErr := p.Up(ctx)
	for _, r := range results {
		if r.Error == nil {
			s.cfg.logger.Info("sqlstore: applied migration", "version", r.Source.Version, "duration", r.Duration)
		}
	}
	if upErr != nil {
		// Accept only a database on which every known migration is
		// applied (another process migrated it meanwhile): an up-to-date
		// maximum version alone could hide a gap.
		if missing, err := missingVersions(ctx, db, latest); err == nil && len(missing) == 0 {
			return nil
		}
		return fmt.Errorf("sqlstore: migrate: %w", mapErr(upErr))
	}
	return nil
}

// SchemaVersion returns the database's applied schema version and the
// latest version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	if s.closed.Load() {
		return 0, 0, store.ErrStoreClosed
	}
	latest, err = migrations.Latest()
	if err != nil {
		return 0, 0, err
	}
	current, err = dbVersion(ctx, s.reads.DB)
	if err != nil && s.closed.Load() { // closed while the query ran
		return 0, 0, store.ErrStoreClosed
	}
	return current, latest, err
}

// NewMigrationProvider returns a goose Provider for the database at path,
// for tools that show migration status or step through migrations. The
// caller closes the returned *sql.DB.
func NewMigrationProvider(path string, opts ...goose.ProviderOption) (*goose.Provider, *sql.DB, error) {
	cfg := defaultConfig()
	db, err := sql.Open(driverName, writeDSN(path, &cfg))
	if err != nil {
		return nil, nil, mapErr(err)
	}
	db.SetMaxOpenConns(4)
	p, err := migrations.NewSQLiteProvider(db, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return p, db, nil
}

// writeDSN configures every connection of a writing pool: busy timeout
// first (so that switching to WAL waits for a lock), WAL, the synchronous
// level, foreign keys and write transactions that lock at BEGIN.
func writeDSN(path string, cfg *config) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", cfg.busyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(" + string(cfg.sync) + ")",
		"_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=journal_size_limit(%d)", cfg.journalMax),
		"_txlock=immediate",
	}
	return "file:" + escapePath(path) + "?" + strings.Join(q, "&")
}

// readDSN configures the read pool: query-only connections.
func readDSN(path string, cfg *config) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", cfg.busyTimeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
		"_pragma=query_only(1)",
	}
	return "file:" + escapePath(path) + "?" + strings.Join(q, "&")
}

// escapePath makes a file path safe inside a file: URI.
func escapePath(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(path)
}

func hasMemoryMode(path string) bool {
	return strings.Contains(path, "mode=memory") || strings.HasPrefix(path, "file::memory:")
}
