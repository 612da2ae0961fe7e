//go:build race

package sqlstore_test

// raceDetector is true in race-detector builds. The detector slows the
// transpiled SQLite about twentyfold, so the heavy reliability tests run a
// reduced configuration under it; ./test.sh runs their full configuration
// without it (see its reliability block).
const raceDetector = true
