package humanize

import "testing"

// TestAppendEscape: the one escape of stored text behind Escape, the
// CLI's terminal writer and the console's pages: unsafe runes as in a Go
// string literal, bytes that are not UTF-8 as \xNN, the runes of keep as
// they are, and with hold an incomplete sequence at the end kept back.
func TestAppendEscape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, keep  string
		hold      bool
		out, rest string
	}{
		{"plain é €", "", false, "plain é €", ""},
		{"a\tb\nc\rd", "", false, `a\tb\nc\rd`, ""},
		{"a\tb\nc\rd", "\t\n", false, "a\tb\nc\\rd", ""},
		{"a\tb\nc\rd", "\t\n\r", false, "a\tb\nc\rd", ""},
		{"\x1b[2J\x07\x7f", "\t\n", false, `\x1b[2J\x07\x7f`, ""},
		{"\u009b1m \u202eevil\u2066 \u200f", "", false, `\u009b1m \u202eevil\u2066 \u200f`, ""},
		{"bad \xff byte, \ufffd replacement", "", false, `bad \xff byte, ` + "\ufffd replacement", ""},
		{"cut \xe2\x82", "\t\n", true, "cut ", "\xe2\x82"},
		{"cut \xe2\x82", "\t\n", false, `cut \xe2\x82`, ""},
		{"not cut \xe2A", "", true, `not cut \xe2A`, ""},
		{"\xe2 then \xf0\x9f\x98", "", true, `\xe2 then `, "\xf0\x9f\x98"},
	} {
		out, rest := AppendEscape([]byte(">"), []byte(c.in), c.keep, c.hold)
		if string(out) != ">"+c.out || string(rest) != c.rest {
			t.Errorf("AppendEscape(%q, keep %q, hold %v) = %q, rest %q; want %q, rest %q", c.in, c.keep, c.hold, out, rest, ">"+c.out, c.rest)
		}
		if c.keep == "" && !c.hold && Escape(c.in) != c.out {
			t.Errorf("Escape(%q) = %q, want %q", c.in, Escape(c.in), c.out)
		}
	}
}
