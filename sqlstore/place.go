package sqlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentstore/sessionstore/store"
)

// checkDir runs before Open reads or creates anything: it refuses a path
// whose directory does not exist (or is not a directory), saying so,
// rather than reporting a read-only database. The error matches
// fs.ErrNotExist.
func checkDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlstore: the directory %s does not exist: %w", dir, fs.ErrNotExist)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("sqlstore: the directory %s does not exist (a part of it is not a directory): %w", dir, fs.ErrNotExist)
	case err != nil:
		return fmt.Errorf("sqlstore: the directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("sqlstore: %s is not a directory: %w", dir, fs.ErrNotExist)
	}
	return nil
}

// checkWritable runs after probe and before Open creates or changes
// anything (and in HealthCheck): it refuses a database that cannot be
// written — the file, or its -wal or -shm file when present, read-only or
// immutable (chattr +i), or its directory read-only or
// immutable so that the -wal, -shm and -writer.lock files the store needs
// beside it cannot be created — with store.ErrReadOnly. SQLite would open
// such a file read-only and leave -wal and -shm files behind; this way
// opening fails cleanly and leaves nothing. Writability is what the
// kernel grants this process (access(2)), so permissions that do not bind
// it (root) do not refuse, while an immutable file or a read-only mount
// does.
func checkWritable(path string) error {
	dir := filepath.Dir(path)
	_, err := os.Stat(path)
	exists := err == nil
	if exists {
		if err := canWrite(path); err != nil {
			return fmt.Errorf("sqlstore: %w: the database file %s cannot be written (read-only or immutable): %w", store.ErrReadOnly, path, err)
		}
		// The write-ahead log and its index take every write first.
		// They come and go with other processes' connections: one that
		// is not there (any more) is created when needed.
		for _, f := range []string{path + "-wal", path + "-shm"} {
			if err := canWrite(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("sqlstore: %w: the file %s beside the database cannot be written (read-only or immutable): %w", store.ErrReadOnly, f, err)
			}
		}
	}
	// The directory must take the files the store creates beside the
	// database, unless they are all there already and writable.
	if err := canWrite(dir); err != nil {
		need := []string{path + "-wal", path + "-shm", WriterLockPath(path)}
		if !exists {
			need = append(need, path)
		}
		for _, f := range need {
			if canWrite(f) != nil {
				what := "its -wal, -shm and -writer.lock files"
				if !exists {
					what = "the database file"
				}
				return fmt.Errorf("sqlstore: %w: the directory %s cannot be written (read-only or immutable), and the store must create %s there: %w", store.ErrReadOnly, dir, what, err)
			}
		}
	}
	return nil
}

// CheckWritable reports why Open could not write the database at path
// (an error matching store.ErrReadOnly, or fs.ErrNotExist for a missing
// directory), or nil when it could: the checks Open makes before it
// creates anything. Tools use it to say that a database is read-only
// without opening it.
func CheckWritable(path string) error {
	if err := checkDir(path); err != nil {
		return err
	}
	return checkWritable(path)
}
