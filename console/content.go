package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// showContent reports whether agent-written content is shown for r.
func (c *console) showContent(r *http.Request) bool {
	return !c.opt.HideContent || r.URL.Query().Get("content") == "show"
}

// redact passes text through the redaction hook.
func (c *console) redact(field, text string) string {
	if c.opt.Redact == nil || text == "" {
		return text
	}
	return c.opt.Redact(field, text)
}

// redactJSON passes a JSON document through the redaction hook; a result
// that is no longer JSON is returned as a JSON string.
func (c *console) redactJSON(field string, raw json.RawMessage) json.RawMessage {
	if c.opt.Redact == nil || len(raw) == 0 {
		return raw
	}
	out := c.opt.Redact(field, string(raw))
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, _ := json.Marshal(out)
	return b
}

// hiddenJSON stands for a JSON value the viewer has not asked to see.
var hiddenJSON = json.RawMessage(`"[hidden]"`)

// cleanMessage returns m as the viewer may see it: redacted, or with
// every body hidden when show is false.
func (c *console) cleanMessage(m store.Message, show bool) store.Message {
	blocks := make([]store.ContentBlock, len(m.Content))
	for i, b := range m.Content {
		if !show {
			if b.Text != "" {
				b.Text = "[hidden]"
			}
			if len(b.Input) > 0 {
				b.Input = hiddenJSON
			}
			if len(b.Content) > 0 {
				b.Content = hiddenJSON
			}
			if len(b.Extra) > 0 {
				b.Extra = nil
			}
		} else {
			b.Text = c.redact("message.text", b.Text)
			b.Input = c.redactJSON("tool.input", b.Input)
			b.Content = c.redactJSON("tool.result", b.Content)
			if len(b.Extra) > 0 {
				extra := make(map[string]json.RawMessage, len(b.Extra))
				for k, v := range b.Extra {
					extra[k] = c.redactJSON("block."+k, v)
				}
				b.Extra = extra
			}
		}
		blocks[i] = b
	}
	m.Content = blocks
	return m
}

// cleanState redacts (or hides) every value of a state map.
func (c *console) cleanState(field string, m map[string]json.RawMessage, show bool) map[string]json.RawMessage {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if show {
			out[k] = c.redactJSON(field, v)
		} else {
			out[k] = hiddenJSON
		}
	}
	return out
}

// cleanText redacts (or hides) a piece of agent-written text.
func (c *console) cleanText(field, s string, show bool) string {
	if !show && s != "" {
		return "[hidden]"
	}
	return c.redact(field, s)
}

// blockView is one content block as a page shows it.
type blockView struct {
	Type      string
	Text      string
	Name      string
	ID        string
	JSON      string // tool input, tool result or other fields, indented
	IsError   bool
	Collapsed bool // shown as a collapsible details element
}

// messageView is one message as a page shows it.
type messageView struct {
	store.Message
	Blocks []blockView
	Raw    string // the message's JSON, indented
	ConvID string
	SeqStr string
}

func newMessageView(convID string, m store.Message) messageView {
	v := messageView{Message: m, ConvID: convID, SeqStr: strconv.FormatInt(m.Seq, 10)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the page escapes; the raw JSON reads as stored
	enc.SetIndent("", "  ")
	if enc.Encode(m) == nil {
		v.Raw = strings.TrimSuffix(string(humanize.JSONChars(buf.Bytes())), "\n")
	}
	for _, b := range m.Content {
		bv := blockView{Type: b.Type, Text: b.Text, Name: b.Name, ID: b.ID}
		switch b.Type {
		case store.BlockToolUse:
			bv.JSON, bv.Collapsed = prettyJSON(b.Input), true
		case store.BlockToolResult:
			bv.ID = b.ToolUseID
			bv.IsError = b.IsError != nil && *b.IsError
			bv.Collapsed = true
			var s string
			if json.Unmarshal(b.Content, &s) == nil {
				bv.Text = s
			} else {
				bv.JSON = prettyJSON(b.Content)
			}
		case store.BlockText, store.BlockReasoning:
		default:
			if raw, err := json.Marshal(b); err == nil {
				bv.JSON, bv.Collapsed = prettyJSON(raw), true
			}
		}
		v.Blocks = append(v.Blocks, bv)
	}
	return v
}
