package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestPages: the iterator yields every item of every page once, in order,
// stops when the caller stops, and yields a page's error once, last.
func TestPages(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	calls := 0
	list := func(cursor string) (Page[string], error) {
		calls++
		i := 0
		if cursor != "" {
			i = slices.Index(items, cursor) + 1
		}
		end := min(i+2, len(items))
		p := Page[string]{Items: items[i:end]}
		if end < len(items) {
			p.Next = items[end-1]
		}
		return p, nil
	}
	var got []string
	for s, err := range pages(list) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if !slices.Equal(got, items) || calls != 3 {
		t.Errorf("got %q in %d calls", got, calls)
	}
	calls = 0
	for s := range pages(list) {
		if s == "b" {
			break
		}
	}
	if calls != 1 {
		t.Errorf("stopping at the first page read %d pages", calls)
	}
	boom := errors.New("boom")
	var seen []string
	for s, err := range pages(func(cursor string) (Page[string], error) {
		if cursor != "" {
			return Page[string]{}, boom
		}
		return Page[string]{Items: []string{"x"}, Next: "x"}, nil
	}) {
		seen = append(seen, fmt.Sprintf("%s %v", s, err))
	}
	if want := []string{"x <nil>", " boom"}; !slices.Equal(seen, want) {
		t.Errorf("with an error: %q, want %q", seen, want)
	}
}
