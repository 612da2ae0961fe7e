package statusline

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const clearLine = "\r\033[K"

// TestLine: the line is drawn with "\r" and an erase, throttled, cut to
// Width, cleared once; a nil Line does nothing.
func TestLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := New(&buf, time.Hour)
	p.Show("phase %d", 1)
	p.Update(func() string { return "too soon" })
	p.Show("phase %d", 2)
	p.Clear()
	p.Clear()
	p.Update(func() string { return "after a clear" })
	p.Clear()
	want := clearLine + "phase 1" + clearLine + "phase 2" + clearLine + clearLine + "after a clear" + clearLine
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	buf.Reset()
	p = New(&buf, -1)
	p.Update(func() string { return strings.Repeat("é", 200) })
	if got := strings.TrimPrefix(buf.String(), clearLine); len([]rune(got)) != Width || !strings.HasSuffix(got, "…") {
		t.Errorf("long line drawn as %q", got)
	}

	var none *Line
	none.Show("x")
	none.Update(func() string { t.Error("text asked of a nil progress"); return "" })
	none.Clear()
	if New(&buf, 0).Interval() != Every {
		t.Error("the default interval is not Every")
	}
}
