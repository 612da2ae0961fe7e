package jsontext

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestPlainHTMLChars(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`["\u003C\u003E\u0026"]`, `["<>&"]`},                  // upper-case hex
		{`["\\u003c"]`, `["\\u003c"]`},                         // an escaped backslash, then text
		{`["\\\u003c"]`, `["\\<"]`},                            // an escaped backslash, then an escape
		{`["\u00e9 \n \" \u0041"]`, `["\u00e9 \n \" \u0041"]`}, // other escapes stay
		{`{"\u003ckey\u003e":1}`, `{"<key>":1}`},               // keys are strings too
		{`[1,2]`, `[1,2]`},
		{`"\u003`, `"\u003`}, // cut short: left as it is
	} {
		got := string(PlainHTMLChars([]byte(c.in)))
		if got != c.want {
			t.Errorf("PlainHTMLChars(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestPlainHTMLCharsKeepsTheMeaning checks, for values json.Marshal
// escapes, that the rewritten JSON decodes to the same value and holds
// no HTML escape.
func TestPlainHTMLCharsKeepsTheMeaning(t *testing.T) {
	for _, v := range []any{
		map[string]any{"html": "<b>bold</b> & <i>", "n": 1.5, "nested": []any{"a<b", `back\slash`, "\u2028"}},
		[]any{`\u003c`, "<<>>&&", ""},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out := PlainHTMLChars(append([]byte(nil), b...))
		var a, z any
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &z); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if !reflect.DeepEqual(a, z) {
			t.Errorf("%s decodes to %v, want %v", out, z, a)
		}
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if json.Valid(out) && containsEscape(out, esc) {
				t.Errorf("%s still holds %s", out, esc)
			}
		}
	}
}

// containsEscape reports whether esc occurs in b as an escape (not after an
// escaped backslash).
func containsEscape(b []byte, esc string) bool {
	for i := 0; i+len(esc) <= len(b); i++ {
		if b[i] == '\\' {
			if string(b[i:i+len(esc)]) == esc {
				return true
			}
			i++
		}
	}
	return false
}

func FuzzPlainHTMLChars(f *testing.F) {
	f.Add([]byte(`{"a":"\u003cb\u003e"}`))
	f.Add([]byte(`["\\u003c","\\\u0026"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var a any
		if err := json.Unmarshal(b, &a); err != nil {
			return
		}
		out := PlainHTMLChars(append([]byte(nil), b...))
		var z any
		if err := json.Unmarshal(out, &z); err != nil {
			t.Fatalf("%q became invalid %q: %v", b, out, err)
		}
		if !reflect.DeepEqual(a, z) {
			t.Fatalf("%q became %q: %v != %v", b, out, a, z)
		}
	})
}
