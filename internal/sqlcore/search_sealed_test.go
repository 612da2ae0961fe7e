package sqlcore

import "testing"

// TestMessageSearchText: the text the opt-in indexes for a sealed message
// is what migration 14's message trigger extracts: each block's text,
// name, input and content (a string, or the texts of an array).
func TestMessageSearchText(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{`[{"type":"text","text":"hello there"}]`, "hello there"},
		{`[{"type":"tool_use","name":"grep","input":{"q":"x"}},{"type":"tool_result","content":"found it"}]`, `grep {"q":"x"} found it`},
		{`[{"type":"tool_result","content":[{"type":"text","text":"a"},{"type":"image"},{"text":"b"}]}]`, "a b"},
		{`[{"type":"text","text":""},"loose",42]`, ""},
		{`not json`, ""},
		{`{"text":"an object, not an array"}`, ""},
	} {
		if got := messageSearchText([]byte(tc.content)); got != tc.want {
			t.Errorf("messageSearchText(%s) = %q, want %q", tc.content, got, tc.want)
		}
	}
}
