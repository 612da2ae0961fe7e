//go:build !race

package main

// raceOn is set under the race detector, which slows the transpiled SQLite
// about twentyfold: the heavy tests use less data then.
const raceOn = false
