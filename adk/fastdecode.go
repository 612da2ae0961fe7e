package adk

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/session"
)

// A decoder for the shapes of a stored event that ADK's runner writes,
// the JSON this service writes with encoding/json: events made by
// session.NewEvent (an empty artifact delta, a state delta), model text,
// thoughts and function calls, function responses, usage counts and the
// plain fields. Reading a session's events is mostly decoding them, and
// encoding/json spends most of that in reflection; this decoder reads the
// hot fields directly and hands each rarer member it knows (grounding and
// citation metadata, transcriptions, routes, workflow fields, thought
// signatures, ...) to encoding/json on its own, so that one such member
// does not send the whole event down the slow path. Anything else — an
// unknown key (encoding/json matches keys without regard to case), a key
// twice, an escape in a key, a number of another form, invalid UTF-8 in a
// key — makes it give up, and the event is decoded by encoding/json (with
// session.Event's own UnmarshalJSON) as before. Where it does not give up,
// its result is exactly encoding/json's: FuzzFastDecodeEvent compares the
// two.

// fastDecodeEvent decodes data into ev when data has a known shape; it
// reports false (ev then holds partial work and must be discarded)
// otherwise. The strings of ev share data's memory (see fastDec.view):
// the caller must not write to data afterwards. slab, when not nil,
// provides the structs ev points to.
func fastDecodeEvent(data []byte, ev *session.Event, slab *decodeSlab) bool {
	d := fastDec{b: data, slab: slab}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			if d.null() {
				ev.Content = nil
				return true
			}
			c := d.slab.content()
			ev.Content = c
			return d.content(c)
		case "usageMetadata":
			if d.null() {
				ev.UsageMetadata = nil
				return true
			}
			u := d.slab.usage()
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
		case "finishReason":
			return d.str((*string)(&ev.FinishReason))
		case "avgLogprobs":
			return d.float(&ev.AvgLogprobs)
		case "sessionResumptionHandle":
			return d.str(&ev.SessionResumptionHandle)
		case "customMetadata":
			return d.anyMap(&ev.CustomMetadata)
		case "id":
			return d.str(&ev.ID)
		case "timestamp":
			return d.timestamp(&ev.Timestamp)
		case "invocationId":
			return d.str(&ev.InvocationID)
		case "branch":
			return d.str(&ev.Branch)
		case "isolationScope":
			return d.str(&ev.IsolationScope)
		case "author":
			return d.str(&ev.Author)
		case "actions":
			return d.actions(&ev.Actions)
		case "output":
			v, ok := d.value()
			ev.Output = v
			return ok
		case "citationMetadata":
			return d.delegate(&ev.CitationMetadata)
		case "groundingMetadata":
			return d.delegate(&ev.GroundingMetadata)
		case "logprobsResult":
			return d.delegate(&ev.LogprobsResult)
		case "inputTranscription":
			return d.delegate(&ev.InputTranscription)
		case "outputTranscription":
			return d.delegate(&ev.OutputTranscription)
		case "longRunningToolIds":
			return d.delegate(&ev.LongRunningToolIDs)
		case "routes":
			return d.delegate(&ev.Routes)
		case "requestedInput":
			return d.delegate(&ev.RequestedInput)
		case "nodeInfo":
			return d.delegate(&ev.NodeInfo)
		}
		return false
	})
	if !ok {
		return false
	}
	// As session.Event.UnmarshalJSON: an empty node info is none.
	if ni := ev.NodeInfo; ni != nil && ni.Path == "" && !ni.MessageAsOutput && len(ni.OutputFor) == 0 {
		ev.NodeInfo = nil
	}
	d.ws()
	return d.i == len(d.b)
}

// maxObjectKeys is the most keys an object may have on the fast path
// (each key is checked against the others, so that a duplicate, which
// encoding/json would merge, gives up).
const maxObjectKeys = 64

// maxDepth is the deepest nesting of arrays and objects decoded on the
// fast path; deeper documents go to encoding/json, which has limits of
// its own.
const maxDepth = 100

type fastDec struct {
	b     []byte
	i     int
	depth int         // nesting of the composite values being decoded by value
	slab  *decodeSlab // nil: every struct is allocated on its own
}

// decodeSlab hands out the structs the events of one read point to from
// a few allocations, one per kind, instead of one per struct (see
// decodeEvents): the events of a read live and die together. When a kind
// runs out, new allocates.
type decodeSlab struct {
	contents []genai.Content
	parts    []genai.Part
	ptrs     []*genai.Part // the backing of Content.Parts slices
	usages   []genai.GenerateContentResponseUsageMetadata
}

// newDecodeSlab returns a slab for n events (a content with one part and
// usage metadata each).
func newDecodeSlab(n int) *decodeSlab {
	return &decodeSlab{
		contents: make([]genai.Content, n),
		parts:    make([]genai.Part, n),
		ptrs:     make([]*genai.Part, n),
		usages:   make([]genai.GenerateContentResponseUsageMetadata, n),
	}
}

// take returns the first element of *free, or a new one when it is empty.
func take[T any](free *[]T) *T {
	if len(*free) == 0 {
		return new(T)
	}
	v := &(*free)[0]
	*free = (*free)[1:]
	return v
}

func (s *decodeSlab) content() *genai.Content {
	if s == nil {
		return new(genai.Content)
	}
	return take(&s.contents)
}

func (s *decodeSlab) part() *genai.Part {
	if s == nil {
		return new(genai.Part)
	}
	return take(&s.parts)
}

func (s *decodeSlab) usage() *genai.GenerateContentResponseUsageMetadata {
	if s == nil {
		return new(genai.GenerateContentResponseUsageMetadata)
	}
	return take(&s.usages)
}

// partSlice returns a copy of ps (never nil) whose capacity is its
// length, so that an append to it reallocates instead of writing into
// the slab.
func (s *decodeSlab) partSlice(ps []*genai.Part) []*genai.Part {
	if s == nil || len(s.ptrs) < len(ps) {
		return append(make([]*genai.Part, 0, len(ps)), ps...)
	}
	out := s.ptrs[:len(ps):len(ps)]
	s.ptrs = s.ptrs[len(ps):]
	copy(out, ps)
	return out
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
	seen := make([][]byte, 0, 16) // on the stack unless an object has more keys
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
		if n == maxObjectKeys || !utf8.Valid(key) {
			return false
		}
		seen = append(seen, key)
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
	// Most strings hold no escape: up to the next quote, with
	// bytes.IndexByte's vector search, then one pass for control bytes.
	// With an escape before that quote, byte by byte from here.
	if rest := d.b[d.i:]; len(rest) > 16 {
		if q := bytes.IndexByte(rest, '"'); q >= 0 && bytes.IndexByte(rest[:q], '\\') < 0 {
			if hasControl(rest[:q]) {
				return nil, false, false
			}
			d.i += q + 1
			return d.b[start:d.i], false, true
		}
	}
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

// hasControl tells whether b holds a byte below 0x20 (which a JSON string
// may not hold unescaped), eight bytes at a time.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 makes (x - 0x20 in every byte) borrow into its
		// high bit where x's own high bit is clear.
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func (d *fastDec) str(dst *string) bool {
	raw, escaped, ok := d.rawString()
	if !ok {
		return false
	}
	inner := raw[1 : len(raw)-1]
	if !escaped && utf8.Valid(inner) {
		*dst = d.view(inner)
		return true
	}
	return json.Unmarshal(raw, dst) == nil
}

// view returns the bytes b of the document as a string without copying
// them: the decoder's strings (and map keys) share the document's memory,
// which its caller gave up (see fastDecodeEvent) and nothing writes again.
// A string keeps the whole document alive, as the event it belongs to
// does.
func (d *fastDec) view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
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

// integer reads an integer of bits bits without fraction or exponent (as
// encoding/json decodes one into an int of that size).
func (d *fastDec) integer(bits int) (int64, bool) {
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
		return 0, false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bits)
	return v, err == nil
}

func (d *fastDec) int32(dst *int32) bool {
	v, ok := d.integer(32)
	*dst = int32(v)
	return ok
}

// float reads a number into a float64.
func (d *fastDec) float(dst *float64) bool {
	v, ok := d.value()
	f, isNum := v.(float64)
	*dst = f
	return ok && isNum
}

// null consumes a null if one is next.
func (d *fastDec) null() bool {
	d.ws()
	return d.lit("null")
}

// skipValue moves past the value at d without decoding it.
func (d *fastDec) skipValue() bool {
	switch c := d.peek(); {
	case c == '"':
		_, _, ok := d.rawString()
		return ok
	case c == '{' || c == '[':
		return d.skipComposite()
	case c == 0:
		return false
	}
	start := d.i
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return d.i > start
		}
		d.i++
	}
	return d.i > start
}

// delegate decodes the value at d into dst with encoding/json: the
// members of an event that are rare enough not to be worth a decoder of
// their own.
func (d *fastDec) delegate(dst any) bool {
	d.ws()
	start := d.i
	if !d.skipValue() {
		return false
	}
	return json.Unmarshal(d.b[start:d.i], dst) == nil
}

// anyMap reads an object (or null) into a map of JSON values, as
// encoding/json decodes one into a map[string]any.
func (d *fastDec) anyMap(dst *map[string]any) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if d.peek() != '{' {
		return false
	}
	m := map[string]any{}
	*dst = m
	return d.object(func(key []byte) bool {
		v, ok := d.value()
		m[d.view(key)] = v
		return ok
	})
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
			var buf [4]*genai.Part // the parts, on the stack unless there are more
			ps := buf[:0]
			if d.next(']') {
				c.Parts = d.slab.partSlice(ps)
				return true
			}
			for {
				p := d.slab.part()
				ok := d.object(func(key []byte) bool { return d.part(key, p) })
				if !ok {
					return false
				}
				ps = append(ps, p)
				if d.next(']') {
					c.Parts = d.slab.partSlice(ps)
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
		case "trafficType":
			return d.str((*string)(&u.TrafficType))
		case "promptTokensDetails":
			return d.modalityCounts(&u.PromptTokensDetails)
		case "candidatesTokensDetails":
			return d.modalityCounts(&u.CandidatesTokensDetails)
		case "cacheTokensDetails":
			return d.modalityCounts(&u.CacheTokensDetails)
		case "toolUsePromptTokensDetails":
			return d.modalityCounts(&u.ToolUsePromptTokensDetails)
		}
		return false
	})
}

func (d *fastDec) actions(a *session.EventActions) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "stateDelta":
			return d.anyMap(&a.StateDelta)
		case "artifactDelta":
			if d.null() {
				a.ArtifactDelta = nil
				return true
			}
			if d.peek() != '{' {
				return false
			}
			a.ArtifactDelta = map[string]int64{}
			return d.object(func(key []byte) bool {
				v, ok := d.integer(64)
				a.ArtifactDelta[d.view(key)] = v
				return ok
			})
		case "requestedToolConfirmations":
			return d.delegate(&a.RequestedToolConfirmations)
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

// modalityCounts reads the per-modality token counts of usage metadata
// (null or an array of objects).
func (d *fastDec) modalityCounts(dst *[]*genai.ModalityTokenCount) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if !d.next('[') {
		return false
	}
	out := []*genai.ModalityTokenCount{}
	*dst = out
	if d.next(']') {
		return true
	}
	for {
		mc := new(genai.ModalityTokenCount)
		ok := d.object(func(key []byte) bool {
			switch string(key) {
			case "modality":
				return d.str((*string)(&mc.Modality))
			case "tokenCount":
				return d.int32(&mc.TokenCount)
			}
			return false
		})
		if !ok {
			return false
		}
		out = append(out, mc)
		*dst = out
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// base64 reads bytes as encoding/json encodes them: a standard base64
// string without escapes (anything else goes to encoding/json).
func (d *fastDec) base64(dst *[]byte) bool {
	if d.null() {
		*dst = nil
		return true
	}
	raw, escaped, ok := d.rawString()
	if !ok || escaped {
		return false
	}
	src := raw[1 : len(raw)-1]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	n, err := base64.StdEncoding.Decode(out, src)
	*dst = out[:n]
	return err == nil
}

// part reads one member of a content part: text, thoughts and function
// calls and responses directly, the rest through delegate.
func (d *fastDec) part(key []byte, p *genai.Part) bool {
	switch string(key) {
	case "text":
		return d.str(&p.Text)
	case "thought":
		return d.boolean(&p.Thought)
	case "thoughtSignature":
		return d.base64(&p.ThoughtSignature)
	case "functionCall":
		if d.null() {
			p.FunctionCall = nil
			return true
		}
		fc := new(genai.FunctionCall)
		p.FunctionCall = fc
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "id":
				return d.str(&fc.ID)
			case "name":
				return d.str(&fc.Name)
			case "args":
				return d.anyMap(&fc.Args)
			case "partialArgs":
				return d.delegate(&fc.PartialArgs)
			case "willContinue":
				return d.delegate(&fc.WillContinue)
			}
			return false
		})
	case "functionResponse":
		if d.null() {
			p.FunctionResponse = nil
			return true
		}
		fr := new(genai.FunctionResponse)
		p.FunctionResponse = fr
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "id":
				return d.str(&fr.ID)
			case "name":
				return d.str(&fr.Name)
			case "response":
				return d.anyMap(&fr.Response)
			case "scheduling":
				return d.str((*string)(&fr.Scheduling))
			case "willContinue":
				return d.delegate(&fr.WillContinue)
			case "parts":
				return d.delegate(&fr.Parts)
			}
			return false
		})
	case "inlineData":
		return d.delegate(&p.InlineData)
	case "fileData":
		return d.delegate(&p.FileData)
	case "executableCode":
		return d.delegate(&p.ExecutableCode)
	case "codeExecutionResult":
		return d.delegate(&p.CodeExecutionResult)
	case "videoMetadata":
		return d.delegate(&p.VideoMetadata)
	case "mediaResolution":
		return d.delegate(&p.MediaResolution)
	case "partMetadata":
		return d.anyMap(&p.PartMetadata)
	case "toolCall":
		return d.delegate(&p.ToolCall)
	case "toolResponse":
		return d.delegate(&p.ToolResponse)
	case "audioTranscription":
		return d.delegate(&p.AudioTranscription)
	}
	return false
}

// value reads any JSON value as encoding/json decodes it into an
// interface: strings, float64 numbers, booleans, null, and objects
// (map[string]any) and arrays ([]any) of them.
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
		if d.depth == maxDepth {
			return nil, false
		}
		d.depth++
		defer func() { d.depth-- }()
		if c == '{' {
			m := map[string]any{}
			ok := d.object(func(key []byte) bool {
				v, ok := d.value()
				m[d.view(key)] = v
				return ok
			})
			return m, ok
		}
		d.i++ // [
		arr := []any{}
		if d.next(']') {
			return arr, true
		}
		for {
			v, ok := d.value()
			if !ok {
				return nil, false
			}
			arr = append(arr, v)
			if d.next(']') {
				return arr, true
			}
			if !d.next(',') {
				return nil, false
			}
		}
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
