package archive

// Streaming JSON for export and import: an export document is written one
// item at a time (jsonOut) and read one item at a time (jsonIn), so that
// their memory does not grow with the database — only with the largest
// single item (one conversation with its messages, one agent session with
// its events, one upload).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// jsonOut writes one JSON document incrementally, with two-space
// indentation and no HTML escaping: byte for byte what json.Encoder with
// SetIndent("", "  ") and SetEscapeHTML(false) writes for the whole
// document.
type jsonOut struct {
	w      *bufio.Writer
	err    error
	counts []int // elements written so far in each open container
	buf    bytes.Buffer
}

func newJSONOut(w io.Writer) *jsonOut { return &jsonOut{w: bufio.NewWriterSize(w, 64<<10)} }

func (o *jsonOut) write(s string) {
	if o.err == nil {
		_, o.err = o.w.WriteString(s)
	}
}

// element starts the next element of the open container: a comma after
// the previous one, a new line, the indentation and, in an object, the
// key.
func (o *jsonOut) element(key string) {
	if len(o.counts) == 0 {
		return
	}
	last := len(o.counts) - 1
	if o.counts[last] > 0 {
		o.write(",")
	}
	o.counts[last]++
	o.write("\n" + strings.Repeat("  ", len(o.counts)))
	if key != "" {
		k, _ := json.Marshal(key)
		o.write(string(k) + ": ")
	}
}

// open starts an object ('{') or array ('[') as the next element.
func (o *jsonOut) open(key string, delim byte) {
	o.element(key)
	o.write(string(delim))
	o.counts = append(o.counts, 0)
}

// close ends the innermost container with '}' or ']'.
func (o *jsonOut) close(delim byte) {
	n := o.counts[len(o.counts)-1]
	o.counts = o.counts[:len(o.counts)-1]
	if n > 0 {
		o.write("\n" + strings.Repeat("  ", len(o.counts)))
	}
	o.write(string(delim))
}

// value writes v as the next element.
func (o *jsonOut) value(key string, v any) {
	o.element(key)
	if o.err != nil {
		return
	}
	o.buf.Reset()
	enc := json.NewEncoder(&o.buf)
	enc.SetIndent(strings.Repeat("  ", len(o.counts)), "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		o.err = err
		return
	}
	o.write(strings.TrimSuffix(o.buf.String(), "\n"))
}

// finish ends the document with a newline and flushes it.
func (o *jsonOut) finish() error {
	o.write("\n")
	if o.err != nil {
		return o.err
	}
	return o.w.Flush()
}

// jsonIn reads a JSON document token by token, decoding one value at a
// time. Unknown fields of decoded values are errors.
type jsonIn struct {
	dec *json.Decoder
}

func newJSONIn(r io.Reader) *jsonIn {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	dec.DisallowUnknownFields()
	return &jsonIn{dec: dec}
}

// invalid makes a decoding error an invalid-input error at the position it
// was found.
func (in *jsonIn) invalid(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return store.Invalid("file", fmt.Sprintf("malformed JSON at byte %d: unexpected end of JSON input", in.dec.InputOffset()))
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return store.Invalid("file", jsonErr(err))
	}
	return asInvalid(fmt.Errorf("%s (at byte %d)", jsonErr(err), in.dec.InputOffset()))
}

// delim reads the next token, which must be want ('{', '[', '}' or ']').
// With orNull, a null is accepted instead of an opening delimiter: it
// reports false then.
func (in *jsonIn) delim(want json.Delim, orNull bool) (bool, error) {
	tok, err := in.dec.Token()
	if err != nil {
		return false, in.invalid(err)
	}
	if tok == nil && orNull {
		return false, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return false, in.invalid(fmt.Errorf("expected %q, found %v", want, tok))
	}
	return true, nil
}

// key reads the next key of an object; ok is false at the object's end
// (whose '}' it consumes).
func (in *jsonIn) key() (string, bool, error) {
	if !in.dec.More() {
		_, err := in.delim('}', false)
		return "", false, err
	}
	tok, err := in.dec.Token()
	if err != nil {
		return "", false, in.invalid(err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", false, in.invalid(fmt.Errorf("expected a key, found %v", tok))
	}
	return k, true, nil
}

// decode reads the next value into v.
func (in *jsonIn) decode(v any) error {
	if err := in.dec.Decode(v); err != nil {
		return in.invalid(err)
	}
	return nil
}

// array reads an array (or null) calling item for each element; item
// decodes the element itself (in.decode).
func (in *jsonIn) array(item func(i int) error) error {
	ok, err := in.delim('[', true)
	if err != nil || !ok {
		return err
	}
	for i := 0; in.dec.More(); i++ {
		if err := item(i); err != nil {
			return err
		}
	}
	_, err = in.delim(']', false)
	return err
}

// end checks that nothing but white space follows the document.
func (in *jsonIn) end() error {
	if _, err := in.dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("data after the end of the document")
		}
		return in.invalid(err)
	}
	return nil
}

// asInvalid makes a parse error an invalid-input error.
func asInvalid(err error) error {
	if errors.Is(err, store.ErrInvalidInput) {
		return err
	}
	return store.Invalid("file", err.Error())
}

// jsonErr describes a JSON decoding error briefly.
func jsonErr(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, err)
	}
	return err.Error()
}

// prefixInvalid puts field in front of an invalid-input error's field.
func prefixInvalid(field string, err error) error {
	var ie *store.InvalidInputError
	if errors.As(err, &ie) {
		return store.Invalid(field+"."+ie.Field, ie.Reason)
	}
	return err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// countingReader counts the bytes read through it and calls after (when
// not nil) after each read.
type countingReader struct {
	r     io.Reader
	n     int64
	after func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.after != nil {
		c.after()
	}
	return n, err
}

// nonNil returns s, or an empty slice for nil (an empty JSON array).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
