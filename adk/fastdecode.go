package adk

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/session"
)

// A decoder for the common shape of a stored event, the JSON this service
// writes with encoding/json: model text parts, usage counts, plain fields
// and a state delta. Reading a session's events is mostly decoding them,
// and encoding/json spends most of that in reflection; this decoder reads
// the shape it knows directly. Anything else — another key, a key twice,
// null, an escape it does not take, a number of another form, invalid
// UTF-8 — makes it give up, and the event is decoded by encoding/json
// (with session.Event's own UnmarshalJSON) as before. Where it does not
// give up, its result is exactly encoding/json's: FuzzFastDecodeEvent
// compares the two.

// fastDecodeEvent decodes data into ev when data has the common shape; it
// reports false (ev then holds partial work and must be discarded)
// otherwise.
func fastDecodeEvent(data []byte, ev *session.Event) bool {
	d := fastDec{b: data}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			c := new(genai.Content)
			ev.Content = c
			return d.content(c)
		case "usageMetadata":
			u := new(genai.GenerateContentResponseUsageMetadata)
			ev.UsageMetadata = u
			return d.usage(u)
		case "turnComplete":
			return d.boolean(&ev.TurnComplete)
		case "partial":
			return d.boolean(&ev.Partial)
		case "interrupted":
			return d.boolean(&ev.Interrupted)
		case "modelVersion":
			return d.str(&ev.ModelVersion)
		case "errorCode":
			return d.str(&ev.ErrorCode)
		case "errorMessage":
			return d.str(&ev.ErrorMessage)
		case "id":
			return d.str(&ev.ID)
		case "timestamp":
			return d.timestamp(&ev.Timestamp)
		case "invocationId":
			return d.str(&ev.InvocationID)
		case "branch":
			return d.str(&ev.Branch)
		case "author":
			return d.str(&ev.Author)
		case "actions":
			return d.actions(&ev.Actions)
		}
		return false
	})
	if !ok {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

type fastDec struct {
	b []byte
	i int
}

func (d *fastDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (d *fastDec) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDec) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// object reads an object, calling field with each key (its bytes, valid
// until the next call) with the reader before the value. A key with an
// escape, or seen twice (encoding/json would merge the second value into
// the first), gives up.
func (d *fastDec) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen [16][]byte
	n := 0
	for {
		raw, escaped, ok := d.rawString()
		if !ok || escaped || !d.next(':') {
			return false
		}
		key := raw[1 : len(raw)-1]
		for _, k := range seen[:n] {
			if string(k) == string(key) {
				return false
			}
		}
		if n == len(seen) || !utf8.Valid(key) {
			return false
		}
		seen[n] = key
		n++
		if !field(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// rawString returns the bytes of the string at d (quotes included) and
// whether it has escapes.
func (d *fastDec) rawString() (raw []byte, escaped, ok bool) {
	if !d.next('"') {
		return nil, false, false
	}
	start := d.i - 1
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start:d.i], escaped, true
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			return nil, false, false
		default:
			d.i++
		}
	}
	return nil, false, false
}

func (d *fastDec) str(dst *string) bool {
	raw, escaped, ok := d.rawString()
	if !ok {
		return false
	}
	inner := raw[1 : len(raw)-1]
	if !escaped && utf8.Valid(inner) {
		*dst = string(inner)
		return true
	}
	return json.Unmarshal(raw, dst) == nil
}

func (d *fastDec) boolean(dst *bool) bool {
	d.ws()
	switch {
	case d.lit("true"):
		*dst = true
	case d.lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}

func (d *fastDec) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// int32 reads an integer without fraction or exponent.
func (d *fastDec) int32(dst *int32) bool {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 32)
	if err != nil {
		return false
	}
	*dst = int32(v)
	return true
}

func (d *fastDec) timestamp(dst *time.Time) bool {
	raw, _, ok := d.rawString()
	if !ok {
		return false
	}
	return dst.UnmarshalJSON(raw) == nil
}

func (d *fastDec) content(c *genai.Content) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "role":
			return d.str(&c.Role)
		case "parts":
			if !d.next('[') {
				return false
			}
			c.Parts = []*genai.Part{}
			if d.next(']') {
				return true
			}
			for {
				p := new(genai.Part)
				ok := d.object(func(key []byte) bool {
					switch string(key) {
					case "text":
						return d.str(&p.Text)
					case "thought":
						return d.boolean(&p.Thought)
					}
					return false
				})
				if !ok {
					return false
				}
				c.Parts = append(c.Parts, p)
				if d.next(']') {
					return true
				}
				if !d.next(',') {
					return false
				}
			}
		}
		return false
	})
}

func (d *fastDec) usage(u *genai.GenerateContentResponseUsageMetadata) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "cachedContentTokenCount":
			return d.int32(&u.CachedContentTokenCount)
		case "candidatesTokenCount":
			return d.int32(&u.CandidatesTokenCount)
		case "promptTokenCount":
			return d.int32(&u.PromptTokenCount)
		case "thoughtsTokenCount":
			return d.int32(&u.ThoughtsTokenCount)
		case "toolUsePromptTokenCount":
			return d.int32(&u.ToolUsePromptTokenCount)
		case "totalTokenCount":
			return d.int32(&u.TotalTokenCount)
		}
		return false
	})
}

func (d *fastDec) actions(a *session.EventActions) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "stateDelta":
			if d.peek() != '{' {
				return false
			}
			a.StateDelta = map[string]any{}
			return d.object(func(key []byte) bool {
				v, ok := d.value()
				a.StateDelta[string(key)] = v
				return ok
			})
		case "skipSummarization":
			return d.boolean(&a.SkipSummarization)
		case "transferToAgent":
			return d.str(&a.TransferToAgent)
		case "escalate":
			return d.boolean(&a.Escalate)
		}
		return false
	})
}

// value reads any JSON value as encoding/json decodes it into an
// interface: strings, float64 numbers, booleans and null directly,
// objects and arrays through encoding/json.
func (d *fastDec) value() (any, bool) {
	switch c := d.peek(); {
	case c == '"':
		var s string
		ok := d.str(&s)
		return s, ok
	case c == 't' || c == 'f':
		var b bool
		ok := d.boolean(&b)
		return b, ok
	case c == 'n':
		return nil, d.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.i
		d.i++
		for d.i < len(d.b) {
			c := d.b[d.i]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				d.i++
				continue
			}
			break
		}
		lit := d.b[start:d.i]
		if !validNumber(lit) {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		return f, err == nil
	case c == '{' || c == '[':
		start := d.i
		if !d.skipComposite() {
			return nil, false
		}
		var v any
		err := json.Unmarshal(d.b[start:d.i], &v)
		return v, err == nil
	}
	return nil, false
}

// skipComposite moves past the object or array at d, minding strings;
// encoding/json validates it afterwards.
func (d *fastDec) skipComposite() bool {
	depth := 0
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '"':
			if _, _, ok := d.rawString(); !ok {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				d.i++
				return true
			}
		}
		d.i++
	}
	return false
}

// validNumber reports whether lit is a JSON number.
func validNumber(lit []byte) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case i < len(lit) && lit[i] >= '1' && lit[i] <= '9':
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if i == len(lit) || lit[i] < '0' || lit[i] > '9' {
			return false
		}
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if i == len(lit) || lit[i] < '0' || lit[i] > '9' {
			return false
		}
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	}
	return i == len(lit)
}
