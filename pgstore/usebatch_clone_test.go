package pgstore

import (
	"reflect"
	"testing"
)

// TestClone3: the three copies a batch gives each caller's session are
// equal to their sources and nil where those are nil, and no write to one
// (an element changed, an append) reaches its source or another copy.
func TestClone3(t *testing.T) {
	for _, in := range [][3][]string{
		{{"p"}, {"read", "write"}, {"c1", "c2", "c3"}},
		{nil, {"*"}, {}},
		{{}, nil, nil},
		{nil, nil, nil},
	} {
		src := [3][]string{}
		for i := range in {
			if in[i] != nil {
				src[i] = append([]string{}, in[i]...)
			}
		}
		a, b, c := clone3(in[0], in[1], in[2])
		out := [3][]string{a, b, c}
		for i := range out {
			if (out[i] == nil) != (in[i] == nil) || !reflect.DeepEqual(out[i], src[i]) {
				t.Fatalf("copy %d of %q: %#v", i, in, out[i])
			}
		}
		// An append to each copy: none reaches the next copy.
		for i := range out {
			_ = append(out[i], "appended")
		}
		for i := range out {
			if !reflect.DeepEqual(out[i], src[i]) {
				t.Fatalf("copy %d after the appends: %q, want %q", i, out[i], src[i])
			}
		}
		// A change of each copy's elements: none reaches the sources.
		for i := range out {
			if len(out[i]) > 0 {
				out[i][0] = "changed"
			}
		}
		for i := range in {
			if !reflect.DeepEqual(in[i], src[i]) {
				t.Errorf("source %d changed: %q, want %q", i, in[i], src[i])
			}
		}
	}
}
