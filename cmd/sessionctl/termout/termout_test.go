package termout

import (
	"bytes"
	"testing"
)

// TestWriter: the safety net escapes controls but tab and newline,
// also when a UTF-8 sequence is split between two writes.
func TestWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := NewWriter(&b)
	c1 := []byte("\u009b")
	for _, p := range [][]byte{[]byte("ok\tx\n\x1b[2J"), c1[:1], c1[1:], []byte("é\u202e"), {0xff}, []byte("end\n"), c1[:1]} {
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "ok\tx\n\\x1b[2J\\u009bé\\u202e\\xffend\n\\xc2"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
