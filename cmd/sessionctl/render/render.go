// Package render writes the store's results for people: the rows and
// "key  value" blocks of sessionctl's tables and reports. Its functions
// take values and write text (or return a table's cells); they parse
// nothing and open nothing. Every field of stored data goes through esc,
// so that it stays in its cell and never reaches a terminal as a control
// sequence (package termout).
package render

import "github.com/agentstore/sessionstore/humanize"

// esc escapes s for one cell or line (humanize.Escape).
func esc(s string) string { return humanize.Escape(s) }
