//go:build !race

package sqlstore_test

// raceDetector is true in race-detector builds (see reliability_race_test.go).
const raceDetector = false
