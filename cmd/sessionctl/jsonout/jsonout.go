// Package jsonout writes sessionctl's --json documents: past the
// terminal's escaping (termout.Raw), with <, > and & as they are, and
// times in the one encoding the store's own types use.
package jsonout

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/humanize"
)

// Write writes v as one indented JSON document, unescaped (see
// termout.Raw).
func Write(w io.Writer, v any) error { return Encode(termout.Raw(w), v, "  ") }

// Encode writes v as one JSON document, indented by indent ("": on one
// line), with <, > and & as the characters they are: encoding/json
// escapes them for HTML (\u003c) in stored JSON too, a message's text or
// a tool's input, which a reader must see as it was written.
func Encode(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(humanize.JSONChars(buf.Bytes()))
	return err
}

// Time formats t for JSON output ("" for the zero time): RFC 3339 in UTC
// with as many fraction digits as needed, the encoding of time.Time
// values in the store's own types.
func Time(t time.Time) string { return humanize.Time(t) }
