package main

// Human output never passes control characters of stored data to the
// terminal: an escape sequence in a message, a session name or an id would
// otherwise reach it (move the cursor, retitle the window, rewrite what
// the operator sees). Every field of stored data printed in a table or a
// line goes through esc, which also escapes tabs and newlines, so that a
// field stays in its cell and on its line. Behind that, the writers of
// human output (termWriter) escape any control character but tab and
// newline, as a safety net for a field printed without esc. JSON output is
// written past the safety net, unchanged: encoding/json escapes the C0
// controls itself, and a JSON consumer gets the data exactly.

import (
	"io"

	"github.com/agentstore/sessionstore/humanize"
)

// unsafeRune reports whether r must not reach a terminal as it is
// (humanize.UnsafeRune).
func unsafeRune(r rune) bool { return humanize.UnsafeRune(r) }

// esc returns s with every unsafe rune escaped as in a Go string literal
// (\t, \n, \r, \x1b, \u009b, \u202e) and every byte that is not UTF-8 as
// \xNN; other text, backslashes included, is unchanged (humanize.Escape:
// the console and the checks escape the same way).
func esc(s string) string { return humanize.Escape(s) }

// termWriter is the writer of human output: it escapes every unsafe rune
// but tab and newline (which lay out tables and lines) as esc does
// (humanize.AppendEscape). A UTF-8 sequence split between two writes is
// held until the next one (or flush).
type termWriter struct {
	w       io.Writer
	pending []byte
	buf     []byte
}

func newTermWriter(w io.Writer) *termWriter { return &termWriter{w: w} }

// Write escapes p and writes it; it reports len(p) when the escaped bytes
// were written.
func (t *termWriter) Write(p []byte) (int, error) {
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

// flush writes a held incomplete UTF-8 sequence, escaped.
func (t *termWriter) flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = nil
	_, err := io.WriteString(t.w, esc(string(p)))
	return err
}

// rawWriter returns the writer under a termWriter, for output that must
// pass unchanged (JSON documents, export files); other writers are
// returned as they are.
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(*termWriter); ok {
		if err := t.flush(); err != nil {
			return errWriter{err}
		}
		return t.w
	}
	return w
}

// contentWriter is where stored content printed "as it is" goes (uploads
// --ref, artifacts --uri): unchanged into a file or a pipe, escaped like
// any human output on a terminal.
func contentWriter(w io.Writer) io.Writer {
	if isTerminal(rawWriter(w)) {
		return w
	}
	return rawWriter(w)
}

// errWriter fails every write with err.
type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }
