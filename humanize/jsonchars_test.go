package humanize

import (
	"encoding/json"
	"testing"
)

// TestJSONChars: the HTML escapes of encoding/json read as the
// characters they stand for; an escaped backslash and other escapes stay;
// the document means the same.
func TestJSONChars(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"q":"\u003cb\u003e \u0026 \u003C/b\u003E"}`, `{"q":"<b> & </b>"}`},
		{`{"q":"\\u003cb"}`, `{"q":"\\u003cb"}`},
		{`{"q":"a\"\u003c\n\u00e9"}`, `{"q":"a\"<\n\u00e9"}`},
		{`{"n":1}`, `{"n":1}`},
		{`"\`, `"\`},
	} {
		got := string(JSONChars([]byte(c.in)))
		if got != c.want {
			t.Errorf("JSONChars(%s) = %s, want %s", c.in, got, c.want)
		}
		var a, b any
		if json.Unmarshal([]byte(c.in), &a) == nil {
			if err := json.Unmarshal([]byte(got), &b); err != nil || fmtAny(a) != fmtAny(b) {
				t.Errorf("JSONChars(%s) changed the document: %v vs %v", c.in, a, b)
			}
		}
	}
}

func fmtAny(v any) string { b, _ := json.Marshal(v); return string(b) }
