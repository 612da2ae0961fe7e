// Package jsontext holds the one rewrite every stored JSON document goes
// through: HTML-safety escapes written as the characters they stand for.
package jsontext

import "bytes"

// PlainHTMLChars rewrites, inside the JSON strings of valid JSON b, the
// escapes encoding/json writes for HTML safety (\u003c, \u003e, \u0026,
// any hex case) as the characters they stand for, so that stored content
// holds "<b>" as the caller wrote it: what a page, an export or a search
// snippet shows is then the text itself, not its escape. The JSON means
// the same before and after. An escaped backslash followed by "u003c" is
// left alone. b is rewritten in place (the result never grows); JSON
// without such an escape is returned unchanged, after one scan.
func PlainHTMLChars(b []byte) []byte {
	i := bytes.Index(b, []byte(`\u00`))
	if i < 0 {
		return b
	}
	out := b[:0]
	inString, r := false, 0
	for r < len(b) {
		c := b[r]
		switch {
		case !inString:
			if c == '"' {
				inString = true
			}
		case c == '"':
			inString = false
		case c == '\\' && r+1 < len(b):
			if ch, ok := htmlEscape(b[r:]); ok {
				out = append(out, ch)
				r += 6
				continue
			}
			// Any other escape is two bytes or \uXXXX: copy the
			// backslash and the byte after it, so an escaped
			// backslash is never read as the start of an escape.
			out = append(out, c, b[r+1])
			r += 2
			continue
		}
		out = append(out, c)
		r++
	}
	return out
}

// htmlEscape reports the character of a \u003c, \u003e or \u0026 escape at
// the start of s.
func htmlEscape(s []byte) (byte, bool) {
	if len(s) < 6 || s[1] != 'u' || s[2] != '0' || s[3] != '0' {
		return 0, false
	}
	hi, lo := s[4], s[5]|0x20 // lower-case a hex letter; digits are unchanged
	switch {
	case hi == '3' && lo == 'c':
		return '<', true
	case hi == '3' && lo == 'e':
		return '>', true
	case hi == '2' && lo == '6':
		return '&', true
	}
	return 0, false
}
