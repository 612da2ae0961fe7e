// Package suggest finds what a mistyped command, flag or value was
// probably meant to be, for "did you mean" in sessionctl's usage errors.
package suggest

import "strings"

// Closest returns the candidate closest to s, if it is close enough to
// be a typo (at most a third of s's length in edits, and at least 1), or
// a candidate s is a prefix of; "" when none is.
func Closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+1
	if bestD > 2 {
		bestD = 2
	}
	bestD++ // distances below this are suggestions
	for _, c := range candidates {
		if d := EditDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(s) >= 2 {
		for _, c := range candidates {
			if strings.HasPrefix(c, s) {
				return c
			}
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (in bytes: names
// are ASCII).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DidYouMean is " (did you mean NAME?)" when a candidate is close to s.
func DidYouMean(s string, candidates []string) string {
	if c := Closest(s, candidates); c != "" {
		return " (did you mean " + c + "?)"
	}
	return ""
}
