//go:build !unix

package sqlstore

import "errors"

// fileLock is unavailable on this platform; writers of several processes
// rely on SQLite's busy handler and the store's retry alone.
type fileLock struct{}

func openFileLock(string) (*fileLock, error) { return nil, errors.ErrUnsupported }

func (*fileLock) lock() error   { return nil }
func (*fileLock) unlock() error { return nil }
func (*fileLock) close() error  { return nil }
