// Package rowcodec holds the stored forms of domain values: how the SQL
// backends (internal/sqlcore, sqlstore, pgstore) turn store types into
// column values and back. None of it is part of the library's API; the
// domain package store keeps what callers need (types, validation, errors)
// and nothing about how a backend lays out its rows.
//
// Every backend writes and reads these forms through this package, so a
// database written by one binary reads the same in another, and the forms
// are stored: change one only together with a migration.
package rowcodec
