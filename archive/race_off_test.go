//go:build !race

package archive_test

// raceEnabled scales tests down under the race detector.
const raceEnabled = false
