package sqlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// InUseError is Remove's refusal of a database another process holds.
type InUseError struct {
	Path string
	// How says how it is held, as InUse says it ("process 123 has
	// sessions.db open").
	How string
}

// Error names the database and how it is held.
func (e *InUseError) Error() string { return fmt.Sprintf("%s is in use (%s)", e.Path, e.How) }

// Remove deletes the SQLite database at path with the files beside it
// (Files): its -wal, -shm and -journal files before the database, and
// the writer lock last, once nothing it guards is left. It refuses, with
// an *InUseError and removing nothing, while another process holds the
// database (InUse). It does not look at what the database holds: that is
// the caller's decision. A file that does not exist is not an error.
func Remove(path string) error {
	how, err := InUse(path)
	if err != nil {
		return fmt.Errorf("check whether %s is in use: %w", path, err)
	}
	if how != "" {
		return &InUseError{Path: path, How: how}
	}
	for _, f := range []string{path + "-wal", path + "-shm", path + "-journal", path, WriterLockPath(path)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
