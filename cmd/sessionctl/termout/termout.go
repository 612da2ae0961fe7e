// Package termout keeps control characters of stored data away from the
// terminal of sessionctl's human output.
//
// Every field of stored data printed in a table or a line goes through
// an escape (humanize.Escape), which also escapes tabs and newlines, so
// that a field stays in its cell and on its line. Behind that, the
// writers of human output (Writer) escape any control character but tab
// and newline, as a safety net for a field printed without escaping.
// JSON output is written past the safety net (Raw), unchanged:
// encoding/json escapes the C0 controls itself, and a JSON consumer gets
// the data exactly.
package termout

import (
	"io"
	"os"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/mattn/go-isatty"
)

// Writer is the writer of human output: it escapes every unsafe rune
// but tab and newline (which lay out tables and lines) as
// humanize.Escape does (humanize.AppendEscape). A UTF-8 sequence split
// between two writes is held until the next one (or Flush).
type Writer struct {
	w       io.Writer
	pending []byte
	buf     []byte
}

// NewWriter returns a Writer that writes the escaped output to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) when the escaped bytes
// were written.
func (t *Writer) Write(p []byte) (int, error) {
	data := p
	if len(t.pending) > 0 {
		data = append(t.pending, p...)
		t.pending = nil
	}
	var rest []byte
	t.buf, rest = humanize.AppendEscape(t.buf[:0], data, "\t\n", true)
	if len(rest) > 0 {
		t.pending = append([]byte(nil), rest...)
	}
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete UTF-8 sequence, escaped.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = nil
	_, err := io.WriteString(t.w, humanize.Escape(string(p)))
	return err
}

// Raw returns the writer under a Writer, for output that must pass
// unchanged (JSON documents, export files); other writers are returned
// as they are.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		if err := t.Flush(); err != nil {
			return errWriter{err}
		}
		return t.w
	}
	return w
}

// Content is where stored content printed "as it is" goes (uploads
// --ref, artifacts --uri): unchanged into a file or a pipe, escaped like
// any human output on a terminal.
func Content(w io.Writer) io.Writer {
	if IsTerminal(Raw(w)) {
		return w
	}
	return Raw(w)
}

// errWriter fails every write with err.
type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }

// IsTerminal reports whether w is a terminal (not merely a character
// device: /dev/null is one too).
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
