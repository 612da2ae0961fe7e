//go:build !unix

package sqlstore

import "os"

// canWrite is a weaker check where access(2) is missing: the path exists
// and its permission bits allow writing.
func canWrite(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return os.ErrPermission
	}
	return nil
}
