package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/internal/jsontext"
)

// Content block types the store knows by name. Blocks of any other type
// (for example "image") are kept too, with their fields in Extra.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockReasoning  = "reasoning"
)

// Message roles used by agent runtimes. Any role matching the role syntax
// (see ValidateRole) is accepted; these are the common ones.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
)

// Bounds of messages.
const (
	// MaxRoleLength bounds a message role (bytes).
	MaxRoleLength = 64
	// MaxMessageBytes bounds the JSON of one message's content blocks.
	MaxMessageBytes = 8 << 20
	// MaxAppendMessages bounds the messages of one append.
	MaxAppendMessages = 10_000
	// MaxSaveMessages bounds the messages of one Save.
	MaxSaveMessages = 1_000_000
	// MaxMessagePage bounds the messages one ranged read returns; a larger
	// limit is capped. A limit of 0 means DefaultPageSize.
	MaxMessagePage = 10_000
)

// Message is one entry of a conversation's history: a role and its content
// blocks. Seq and CreatedAt are assigned by the store.
type Message struct {
	// Seq is the message's 0-based position in its conversation, assigned
	// by the store and ignored on write. Positions are gapless; trimming the
	// oldest messages keeps the positions of the rest.
	Seq int64 `json:"seq"`
	// Role is who spoke: "user", "assistant", "system", "tool", ...
	Role string `json:"role"`
	// Content holds the message's blocks in order; stored as one JSON array.
	Content []ContentBlock `json:"content"`
	// CreatedAt is when the message was stored; when zero on write, the
	// store's clock is used. Millisecond precision.
	CreatedAt time.Time `json:"created_at"`
	// Compaction is set on a compaction record (written by
	// ConversationBranches.Compact only): the range of positions it
	// summarises. Append refuses a message that sets it.
	Compaction *CompactionRange `json:"compaction,omitempty"`
}

// ContentBlock is one block of a message: text, a tool call, a tool result,
// model reasoning, or a block of another type whose fields the store keeps
// without interpreting them. Its JSON form is the Anthropic-style tagged
// object, {"type": "text", "text": "..."}.
type ContentBlock struct {
	// Type names the block kind (BlockText, BlockToolUse, ...). Required.
	Type string
	// Text is the text of a text or reasoning block.
	Text string
	// ID and Name identify a tool call (tool_use).
	ID   string
	Name string
	// Input is the tool call's JSON arguments (tool_use).
	Input json.RawMessage
	// ToolUseID links a tool result to its call (tool_result).
	ToolUseID string
	// Content is a tool result's content: a JSON string or an array of
	// blocks (tool_result).
	Content json.RawMessage
	// IsError marks a failed tool result; nil when not stated.
	IsError *bool
	// Extra holds every other field of the block (an image's source, trust
	// labels, ...), kept verbatim.
	Extra map[string]json.RawMessage
}

// TextBlock returns a text block.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: BlockText, Text: text} }

// ReasoningBlock returns a block of model reasoning ("thinking").
func ReasoningBlock(text string) ContentBlock { return ContentBlock{Type: BlockReasoning, Text: text} }

// ToolUseBlock returns a tool call block. input must be valid JSON; nil
// means an empty object.
func ToolUseBlock(id, name string, input json.RawMessage) ContentBlock {
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	return ContentBlock{Type: BlockToolUse, ID: id, Name: name, Input: input}
}

// ToolResultBlock returns a tool result block with plain-text content.
func ToolResultBlock(toolUseID, content string, isError bool) ContentBlock {
	c, _ := json.Marshal(content) // a string always marshals
	return ContentBlock{Type: BlockToolResult, ToolUseID: toolUseID, Content: c, IsError: &isError}
}

// UserMessage returns a user message with one text block.
func UserMessage(text string) Message {
	return Message{Role: RoleUser, Content: []ContentBlock{TextBlock(text)}}
}

// AssistantMessage returns an assistant message with one text block.
func AssistantMessage(text string) Message {
	return Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock(text)}}
}

// Text returns the concatenated text of the message's text blocks.
func (m *Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == BlockText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ResultText returns a tool result's content as text: the string itself, or
// the text blocks of an array joined by newlines.
func (c *ContentBlock) ResultText() string {
	if len(c.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(c.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(c.Content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// blockKeys are the JSON keys ContentBlock maps to fields.
var blockKeys = []string{"type", "text", "id", "name", "input", "tool_use_id", "content", "is_error"}

// MarshalJSON writes the block as a tagged JSON object: type first, the
// fields the block's type uses (and any other non-empty known field), then
// Extra in key order. Raw JSON values are written compacted.
func (c ContentBlock) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	field := func(key string, v []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	str := func(key, v string) error {
		b, err := marshalString(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		field(key, b)
		return nil
	}
	raw := func(key string, v json.RawMessage) error {
		var out bytes.Buffer
		if err := json.Compact(&out, v); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		field(key, out.Bytes())
		return nil
	}
	if err := str("type", c.Type); err != nil {
		return nil, err
	}
	if c.Text != "" || c.Type == BlockText || c.Type == BlockReasoning {
		if err := str("text", c.Text); err != nil {
			return nil, err
		}
	}
	if c.ID != "" || c.Type == BlockToolUse {
		if err := str("id", c.ID); err != nil {
			return nil, err
		}
	}
	if c.Name != "" || c.Type == BlockToolUse {
		if err := str("name", c.Name); err != nil {
			return nil, err
		}
	}
	if c.Input != nil {
		if err := raw("input", c.Input); err != nil {
			return nil, err
		}
	}
	if c.ToolUseID != "" || c.Type == BlockToolResult {
		if err := str("tool_use_id", c.ToolUseID); err != nil {
			return nil, err
		}
	}
	if c.Content != nil {
		if err := raw("content", c.Content); err != nil {
			return nil, err
		}
	}
	if c.IsError != nil {
		field("is_error", []byte(fmt.Sprint(*c.IsError)))
	}
	keys := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		if !slices.Contains(blockKeys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !utf8.ValidString(k) {
			return nil, errors.New("extra field name is not valid UTF-8")
		}
		if err := raw(k, c.Extra[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a tagged JSON object. Known keys (matched exactly)
// must have the right JSON type; unknown keys go to Extra.
func (c *ContentBlock) UnmarshalJSON(data []byte) error {
	if !json.Valid(data) {
		return errors.New("content block is not valid JSON")
	}
	p := scanner{b: bytes.Clone(data)}
	p.ws()
	b, err := p.block()
	if err != nil {
		return err
	}
	if p.ws(); p.i != len(p.b) {
		return errors.New("content block has trailing data")
	}
	*c = b
	return nil
}

// setMember stores one member of a block. raw is the member's JSON value.
func (c *ContentBlock) setMember(key string, raw []byte) error {
	var err error
	switch key {
	case "type":
		c.Type, err = rawString(raw)
	case "text":
		c.Text, err = rawString(raw)
	case "id":
		c.ID, err = rawString(raw)
	case "name":
		c.Name, err = rawString(raw)
	case "tool_use_id":
		c.ToolUseID, err = rawString(raw)
	case "input":
		c.Input = raw
	case "content":
		c.Content = raw
	case "is_error":
		switch string(raw) {
		case "true":
			c.IsError = new(bool)
			*c.IsError = true
		case "false":
			c.IsError = new(bool)
		case "null":
			c.IsError = nil
		default:
			err = errors.New("not a boolean")
		}
	default:
		if c.Extra == nil {
			c.Extra = make(map[string]json.RawMessage)
		}
		c.Extra[key] = raw
	}
	if err != nil {
		return fmt.Errorf("content block field %q: %w", key, err)
	}
	return nil
}

// scanner walks JSON that json.Valid has accepted: it only has to find
// where values start and end. Values it returns alias its buffer.
type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// value skips the value at the current position and returns its bytes.
func (p *scanner) value() []byte {
	start, depth := p.i, 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			p.i++
			for p.i < len(p.b) && p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			p.i++
			if depth == 0 {
				return p.b[start:p.i]
			}
		case '{', '[':
			depth++
			p.i++
		case '}', ']':
			if depth == 0 {
				return p.b[start:p.i]
			}
			depth--
			p.i++
			if depth == 0 {
				return p.b[start:p.i]
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return p.b[start:p.i]
			}
			p.i++
		default:
			p.i++
		}
	}
	return p.b[start:p.i]
}

// block reads one object into a content block.
func (p *scanner) block() (ContentBlock, error) {
	var b ContentBlock
	if !p.eat('{') {
		return b, errors.New("content block is not an object")
	}
	if p.ws(); p.eat('}') {
		return b, nil
	}
	for {
		p.ws()
		key, err := rawString(p.value())
		if err != nil {
			return b, err
		}
		p.ws()
		if !p.eat(':') {
			return b, errors.New("malformed content block")
		}
		p.ws()
		if err := b.setMember(key, p.value()); err != nil {
			return b, err
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return b, nil
		}
		return b, errors.New("malformed content block")
	}
}

// rawString decodes a JSON string member (null decodes as ""). Plain
// strings, the common case, are copied without a second JSON pass.
func rawString(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		inner := raw[1 : n-1]
		if bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && utf8.Valid(inner) && !hasControl(inner) {
			return string(inner), nil
		}
	}
	if string(raw) == "null" {
		return "", nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// marshalString encodes s as a JSON string, refusing invalid UTF-8 (which
// encoding/json would silently replace).
func marshalString(s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("not valid UTF-8")
	}
	return json.Marshal(s)
}

// ValidateRole checks a message role: 1 to MaxRoleLength bytes of ASCII
// letters, digits and _ - . :
func ValidateRole(field, role string) error {
	if role == "" {
		return Invalid(field, "must not be empty")
	}
	if len(role) > MaxRoleLength {
		return Invalid(field, "too long")
	}
	for i := 0; i < len(role); i++ {
		c := role[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_-.:", c) >= 0:
		default:
			return Invalid(field, "has a character outside [A-Za-z0-9_-.:]")
		}
	}
	return nil
}

// encodeContent validates content blocks and returns their stored form:
// one compact JSON array (json.Marshal of the blocks; nil is []), with
// "<", ">" and "&" in its strings as themselves, not escaped. The error
// is an *InvalidInputError.
func encodeContent(field string, blocks []ContentBlock) ([]byte, error) {
	if blocks == nil {
		blocks = []ContentBlock{}
	}
	for i := range blocks {
		if err := blocks[i].validate(); err != nil {
			return nil, Invalid(fmt.Sprintf("%s[%d]", field, i), err.Error())
		}
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return nil, Invalid(field, "cannot be encoded as JSON: "+errorReason(err))
	}
	if len(b) > MaxMessageBytes {
		return nil, Invalid(field, "too large")
	}
	return jsontext.PlainHTMLChars(b), nil
}

func (c *ContentBlock) validate() error {
	if c.Type == "" {
		return errors.New("type must not be empty")
	}
	if len(c.Type) > MaxRoleLength {
		return errors.New("type too long")
	}
	for _, raw := range []json.RawMessage{c.Input, c.Content} {
		if raw != nil && !json.Valid(raw) {
			return errors.New("raw value is not valid JSON")
		}
	}
	for k, v := range c.Extra {
		if !json.Valid(v) {
			return fmt.Errorf("extra field %q is not valid JSON", k)
		}
	}
	return nil
}

// errorReason shortens an encoding error to a reason without data.
func errorReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON"
	}
	var ue *json.UnsupportedValueError
	if errors.As(err, &ue) {
		return "unsupported value"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// ValidateMessage checks a message to be written and returns its content
// in the form backends store: the compact JSON of its blocks ([] for none).
// The error is an *InvalidInputError.
func ValidateMessage(field string, m *Message) ([]byte, error) {
	if err := ValidateRole(field+".role", m.Role); err != nil {
		return nil, err
	}
	return encodeContent(field+".content", m.Content)
}
