// Package searchtext computes the search document of an agent event (its
// role and its text) from the event's stored JSON in Go, exactly as the
// SQLite fold's SQL computes them with its JSON functions
// (internal/sqlcore/search_fold.go), for the events whose JSON it is sure
// about; for any other it says so, and the SQL decides.
package searchtext

import (
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting this package reads; deeper JSON is left to
// the SQL (SQLite's own limit is 1000).
const maxDepth = 64

// EventDoc returns the role and the text of the search document of an
// agent event whose stored JSON is data, as the fold's SQL computes them:
//
//	role: data.author, else data.content.role, else "" (a string each)
//	text: for each object of data.content.parts, in order, its text, its
//	      functionCall's name and args (JSON text with the escapes of <,
//	      > and & read as the characters) and its functionResponse's name,
//	      those present joined by a space; the non-empty ones joined by a
//	      space
//
// ok is false when EventDoc cannot be sure its answer is the SQL's: data
// that is not strict JSON in valid UTF-8 (the SQL indexes invalid JSON as
// empty; what it deems invalid is its own business), nesting deeper than
// maxDepth, a key with an escape on a path it looks up, a string escape
// of NUL or of a UTF-16 surrogate, a parts value that is an object, or a
// field of a kind whose SQL rendering it does not reproduce (a number or
// a boolean where a string is expected).
func EventDoc(data string) (role, text string, ok bool) {
	if !utf8.ValidString(data) {
		return "", "", false
	}
	p := parser{s: data}
	p.ws()
	start := p.i
	if !p.value(0) {
		return "", "", false
	}
	end := p.i
	p.ws()
	if p.i != len(p.s) {
		return "", "", false
	}
	root := data[start:end]
	if root[0] != '{' {
		return "", "", true // no author, no content: both empty
	}
	author, found, ok := lookup(root, "author")
	if !ok {
		return "", "", false
	}
	content, hasContent, ok := lookup(root, "content")
	if !ok {
		return "", "", false
	}
	if hasContent && content[0] != '{' {
		hasContent = false // $.content.role and $.content.parts are NULL
	}
	role, isNull, ok := stringOrNull(author, found)
	if !ok {
		return "", "", false
	}
	if isNull && hasContent {
		r, found, ok := lookup(content, "role")
		if !ok {
			return "", "", false
		}
		if role, _, ok = stringOrNull(r, found); !ok {
			return "", "", false
		}
	}
	if !hasContent {
		return role, "", true
	}
	parts, found, ok := lookup(content, "parts")
	if !ok {
		return "", "", false
	}
	if !found || parts[0] != '[' {
		if found && parts[0] == '{' {
			return "", "", false // json_each would walk its members
		}
		return role, "", true
	}
	var b strings.Builder
	var fields []string
	ok = elements(parts, func(part string) bool {
		if part[0] != '{' {
			return true
		}
		fields = fields[:0]
		add := func(v string, found bool) bool {
			s, isNull, ok := stringOrNull(v, found)
			if ok && !isNull {
				fields = append(fields, s)
			}
			return ok
		}
		v, found, ok := lookup(part, "text")
		if !ok || !add(v, found) {
			return false
		}
		call, hasCall, ok := lookup(part, "functionCall")
		if !ok {
			return false
		}
		if hasCall && call[0] == '{' {
			v, found, ok := lookup(call, "name")
			if !ok || !add(v, found) {
				return false
			}
			args, found, ok := lookup(call, "args")
			if !ok {
				return false
			}
			if found {
				switch args[0] {
				case '{', '[':
					fields = append(fields, plain(minify(args)))
				case 'n':
				case '"':
					s, ok := unquote(args)
					if !ok {
						return false
					}
					fields = append(fields, plain(s))
				default:
					return false
				}
			}
		}
		resp, hasResp, ok := lookup(part, "functionResponse")
		if !ok {
			return false
		}
		if hasResp && resp[0] == '{' {
			v, found, ok := lookup(resp, "name")
			if !ok || !add(v, found) {
				return false
			}
		}
		joined := strings.Join(fields, " ")
		if joined == "" {
			return true
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(joined)
		return true
	})
	if !ok {
		return "", "", false
	}
	return role, b.String(), true
}

// plain reads the escapes of "<", ">" and "&" that encoding/json writes
// as the characters, as the SQL's replace() calls do (in their order).
func plain(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	s = strings.ReplaceAll(s, `\u003c`, "<")
	s = strings.ReplaceAll(s, `\u003e`, ">")
	return strings.ReplaceAll(s, `\u0026`, "&")
}

// stringOrNull reads v (found in its object) as json_extract does where
// a string is expected: a string's characters, NULL (isNull) for null or
// a missing key; ok is false for any other kind.
func stringOrNull(v string, found bool) (s string, isNull, ok bool) {
	if !found || v[0] == 'n' {
		return "", true, true
	}
	if v[0] != '"' {
		return "", false, false
	}
	s, ok = unquote(v)
	return s, false, ok
}

// unquote returns the characters of the JSON string q (valid, quotes
// included); ok is false for an escape of NUL or of a surrogate.
func unquote(q string) (string, bool) {
	body := q[1 : len(q)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case '"', '\\', '/':
			b.WriteByte(body[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := rune(hexVal(body[i+1])<<12 | hexVal(body[i+2])<<8 | hexVal(body[i+3])<<4 | hexVal(body[i+4]))
			if r == 0 || (r >= 0xD800 && r <= 0xDFFF) {
				return "", false
			}
			b.WriteRune(r)
			i += 4
		}
	}
	return b.String(), true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}

// minify returns the JSON text v (valid) without the white space between
// its tokens: SQLite's rendering of a container it read from strict JSON.
func minify(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			j := i + 1
			for v[j] != '"' {
				if v[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(v[i : j+1])
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// lookup returns the value of the first member named key of the object
// obj (valid JSON); ok is false when a member's name has an escape.
func lookup(obj, key string) (v string, found, ok bool) {
	p := parser{s: obj, i: 1}
	for {
		p.ws()
		if p.s[p.i] == '}' {
			return "", false, true
		}
		if p.s[p.i] == ',' {
			p.i++
			p.ws()
		}
		ks := p.i
		p.i = skipValue(p.s, p.i)
		name := p.s[ks+1 : p.i-1]
		if strings.IndexByte(name, '\\') >= 0 {
			return "", false, false
		}
		p.ws()
		p.i++ // ':'
		p.ws()
		vs := p.i
		p.i = skipValue(p.s, p.i)
		if name == key {
			return p.s[vs:p.i], true, true
		}
	}
}

// elements calls f with each element of the array arr (valid JSON) until
// f returns false, and returns false then.
func elements(arr string, f func(v string) bool) bool {
	p := parser{s: arr, i: 1}
	for {
		p.ws()
		if p.s[p.i] == ']' {
			return true
		}
		if p.s[p.i] == ',' {
			p.i++
			p.ws()
		}
		vs := p.i
		p.i = skipValue(p.s, p.i)
		if !f(p.s[vs:p.i]) {
			return false
		}
	}
}

// skipValue returns the end of the value at i of s, valid JSON.
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default:
		for i < len(s) {
			switch s[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the end of the string at i of s, valid JSON.
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		i += j
		k := i
		for s[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 {
			return i
		}
	}
}

// parser reads strict JSON (RFC 8259) from s at i.
type parser struct {
	s string
	i int
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one value at p.i (no white space before it) and tells
// whether it is valid.
func (p *parser) value(depth int) bool {
	if p.i >= len(p.s) || depth > maxDepth {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return true
		}
		for {
			if p.i >= len(p.s) || p.s[p.i] != '"' || !p.str() {
				return false
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
			if !p.value(depth + 1) {
				return false
			}
			p.ws()
			if p.i >= len(p.s) {
				return false
			}
			if p.s[p.i] == '}' {
				p.i++
				return true
			}
			if p.s[p.i] != ',' {
				return false
			}
			p.i++
			p.ws()
		}
	case c == '[':
		p.i++
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return true
		}
		for {
			if !p.value(depth + 1) {
				return false
			}
			p.ws()
			if p.i >= len(p.s) {
				return false
			}
			if p.s[p.i] == ']' {
				p.i++
				return true
			}
			if p.s[p.i] != ',' {
				return false
			}
			p.i++
			p.ws()
		}
	case c == '"':
		return p.str()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.num()
	}
	return false
}

func (p *parser) lit(w string) bool {
	if !strings.HasPrefix(p.s[p.i:], w) {
		return false
	}
	p.i += len(w)
	return true
}

// str reads a string at p.i (its opening quote).
func (p *parser) str() bool {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 0x20 && c != '"' && c != '\\' {
			p.i++
			continue
		}
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if p.i+4 >= len(p.s) {
					return false
				}
				for _, h := range []byte(p.s[p.i+1 : p.i+5]) {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				p.i += 5
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

// num reads a number at p.i.
func (p *parser) num() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
