//go:build !race

package storetest

// searchScale scales the search suite's concurrent and multi-process
// tests (see search_race_on.go).
const searchScale = 3
