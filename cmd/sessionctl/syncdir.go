package main

import (
	"errors"
	"os"
)

// syncDir flushes a directory's entries (a file created or renamed in it)
// to stable storage.
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
