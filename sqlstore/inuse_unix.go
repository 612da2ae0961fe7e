//go:build unix

package sqlstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// InUse reports whether another process holds the SQLite database at path,
// and how ("process 123 has sessions.db open"; "" when none is seen): it
// has one of the database's files open (Linux: its file descriptors in
// /proc; a store keeps its -writer.lock file open for its
// whole life, even while idle), holds the store's writer lock, or holds a
// SQLite lock on the database file or on the -shm file (every connection
// in WAL mode keeps one there). Processes of other users whose /proc
// entries cannot be read are seen through their locks only.
func InUse(path string) (string, error) {
	for _, f := range Files(path) {
		if pid, ok := openedBy(f); ok {
			return fmt.Sprintf("process %d has %s open", pid, filepath.Base(f)), nil
		}
	}
	if held, err := flockHeld(WriterLockPath(path)); err != nil {
		return "", err
	} else if held {
		return "another process holds its writer lock", nil
	}
	// SQLite's lock bytes: on the database file from PENDING_BYTE (1 GiB)
	// on; on the -shm file, the dead-man-switch byte every connection of
	// a WAL database holds shared.
	for _, l := range []struct {
		suffix      string
		start, size int64
	}{{"", 0x40000000, 512}, {"-shm", 128, 1}} {
		pid, err := fcntlHolder(path+l.suffix, l.start, l.size)
		if err != nil {
			return "", err
		}
		if pid != 0 {
			return fmt.Sprintf("process %d holds a lock on %s", pid, filepath.Base(path+l.suffix)), nil
		}
	}
	return "", nil
}

// openedBy finds another process with path open, through /proc (Linux).
func openedBy(path string) (int, bool) {
	want, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			fi, err := os.Stat(filepath.Join(fdDir, fd.Name()))
			if err == nil && os.SameFile(fi, want) {
				return pid, true
			}
		}
	}
	return 0, false
}

// flockHeld reports whether another open file holds the flock of path (the
// store's writer lock); a missing file is not held.
func flockHeld(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// fcntlHolder returns the pid of a process holding a POSIX lock on
// [start, start+size) of path (0: none; a missing file has none). Only
// other processes' locks are reported, as F_GETLK does.
func fcntlHolder(path string, start, size int64) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: start, Len: size}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, err
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}
