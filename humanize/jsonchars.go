package humanize

import "bytes"

// JSONChars returns a JSON document with the escapes that encoding/json
// writes for HTML (\u003c, \u003e, \u0026) written as the characters
// they stand for (<, >, &), so that a person reads `<b>` where the
// document holds it; the document means the same. Every other escape,
// and a backslash escaped itself (\\u003c is the text \u003c), stays as
// it is. A page escapes the result for HTML as it escapes any text.
func JSONChars(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u00`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		if raw[i+1] == 'u' && i+5 < len(raw) {
			switch string(bytes.ToLower(raw[i+2 : i+6])) {
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, c, raw[i+1]) // an escape pair, copied whole
		i++
	}
	return out
}
