//go:build !unix

package sqlstore

// InUse cannot tell on this platform whether another process holds the
// database: it reports nothing.
func InUse(string) (string, error) { return "", nil }
