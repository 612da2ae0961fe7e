// Package adkdbbench benchmarks ADK's own database session service
// (google.golang.org/adk/v2/session/database, on the pure-Go GORM SQLite
// dialect ADK's tests use) with the bodies this module's service is
// benchmarked with. It is a package of its own because that dialect's
// driver and the store's both register the database/sql name "sqlite",
// which panics in one binary.
package adkdbbench
