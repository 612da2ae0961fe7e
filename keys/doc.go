// Package keys implements encryption at rest for the session store:
// key-encryption key providers (a key file, an environment variable), the
// directory keyring that keeps every encrypted session's data key wrapped
// outside the database file, and the sealed-value format of encrypted
// columns.
//
// A keyring is a directory (by default "<database>.keyring" beside the
// database file) with one file per data key, named by the key's random
// id. Each file records the KEK version that wrapped the key, so rotation
// (Ring.Rotate) re-wraps key by key, skips those already done, and can be
// interrupted at any point (kill -9 included) and run again. Writes are a
// temporary file, fsync, rename, fsync of the directory; a shred is an
// unlink and an fsync of the directory, after a line naming the key is
// appended to the directory's shred log (".shredded"), so that a key
// that is gone can be told from one the keyring never held. Processes
// sharing the store share the directory without a lock server: files are
// created once under a fresh random name and replaced atomically. A Ring
// caches unwrapped keys but hands a cached key out only while its file
// exists (a stat per Key), so a key shredded by any process is gone for
// every Ring.
//
// Backups: a database backup is readable only together with the keyring
// as it was when the backup was taken, less the keys shredded since (those
// sessions are meant to stay unreadable), and a KeyProvider that still
// holds the KEK versions named by its files.
package keys
