package sqlstore

import (
	"os"
	"path/filepath"
)

// WriterLockSuffix ends the name of the store's writer lock file, which
// sits beside the database: "<path>-writer.lock". A store keeps it open
// for its whole life and holds its OS lock around each write transaction.
const WriterLockSuffix = "-writer.lock"

// WriterLockPath is the writer lock file of the database at path.
func WriterLockPath(path string) string { return path + WriterLockSuffix }

// fileSuffixes end the names of the files of a SQLite database at path:
// path itself and the files SQLite and the store keep beside it.
var fileSuffixes = []string{"", "-wal", "-shm", "-journal", WriterLockSuffix}

// Files lists the files of the database at path: the database itself,
// its -wal, -shm and -journal files and the writer lock file (which may
// not exist).
func Files(path string) []string {
	out := make([]string, len(fileSuffixes))
	for i, s := range fileSuffixes {
		out[i] = path + s
	}
	return out
}

// OwnFile reports whether other names one of the files of the database at
// path (see Files) — the same name, through any symbolic link of its
// directory, or the same file through any link — and which (its base
// name).
func OwnFile(path, other string) (string, bool) {
	otherPath := resolvedPath(other)
	otherFI, otherErr := os.Stat(other)
	for _, own := range Files(path) {
		if resolvedPath(own) == otherPath {
			return filepath.Base(own), true
		}
		if fi, err := os.Stat(own); err == nil && otherErr == nil && os.SameFile(fi, otherFI) {
			return filepath.Base(own), true
		}
	}
	return "", false
}

// resolvedPath is path made absolute, with the symbolic links of its
// directory resolved (the file itself may not exist).
func resolvedPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	dir, base := filepath.Split(abs)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(d, base)
	}
	return abs
}

// sizeOf returns the size of path, 0 when it does not exist.
func sizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
