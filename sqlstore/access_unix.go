//go:build unix

package sqlstore

import "syscall"

// canWrite reports, as access(2) does, whether this process may write
// path: nil, or why not (EACCES, EPERM for an immutable file, EROFS, or
// ENOENT when it does not exist).
func canWrite(path string) error {
	const wOK = 0x2
	for {
		err := syscall.Access(path, wOK)
		if err != syscall.EINTR {
			return err
		}
	}
}
