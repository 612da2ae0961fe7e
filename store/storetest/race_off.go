//go:build !race

package storetest

// raceEnabled scales multi-process tests down under the race detector.
const raceEnabled = false
