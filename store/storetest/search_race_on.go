//go:build race

package storetest

// searchScale scales the search suite's concurrent and multi-process
// tests down under the race detector (it slows every statement several
// times), to keep the race run short; the plain run writes more.
const searchScale = 1
