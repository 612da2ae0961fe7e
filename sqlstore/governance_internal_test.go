package sqlstore

import "testing"

func TestDecodeStrings(t *testing.T) {
	for _, v := range [][]string{{}, {"a"}, {"read_file", "list_dir"}, {"with \"quote\"", "back\\slash"},
		{"a\",\"b"}, {"space here", "tab\there", "ünïcode", "<html>&"}, {""}, {"", ""}} {
		var got []string
		if err := decodeStrings(mustJSON(v), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(v) {
			t.Fatalf("%q: got %q", v, got)
		}
		for i := range v {
			if got[i] != v[i] {
				t.Fatalf("%q: got %q", v, got)
			}
		}
	}
	var got []string
	if err := decodeStrings(`["a", "b"]`, &got); err != nil || len(got) != 2 || got[1] != "b" {
		t.Fatalf("spaced array: %q %v", got, err)
	}
	if err := decodeStrings(`[1,2]`, &got); err == nil {
		t.Fatal("numbers decoded as strings")
	}
}
