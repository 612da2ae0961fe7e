package store

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestStatePrefixesSplitAndMerge(t *testing.T) {
	flat := map[string]json.RawMessage{
		"app:theme":   json.RawMessage(`"dark"`),
		"user:name":   json.RawMessage(`"Ada"`),
		"temp:scrap":  json.RawMessage(`1`),
		"step":        json.RawMessage(`2`),
		"app:":        json.RawMessage(`"empty app key"`),
		"application": json.RawMessage(`"not a prefix"`),
	}
	s := DefaultStatePrefixes.Split(flat)
	if got := slices.Sorted(maps.Keys(s.App)); !slices.Equal(got, []string{"", "theme"}) {
		t.Fatalf("app keys %q", got)
	}
	if got := slices.Sorted(maps.Keys(s.User)); !slices.Equal(got, []string{"name"}) {
		t.Fatalf("user keys %q", got)
	}
	if got := slices.Sorted(maps.Keys(s.Session)); !slices.Equal(got, []string{"application", "step"}) {
		t.Fatalf("session keys %q", got)
	}
	merged := DefaultStatePrefixes.Merge(s)
	delete(flat, "temp:scrap")
	if !maps.EqualFunc(merged, flat, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		t.Fatalf("merge(split(x)) = %v, want x without temp keys", merged)
	}

	custom := StatePrefixes{App: "a.", User: "u.", Temp: ""}
	s = custom.Split(map[string]json.RawMessage{"a.x": json.RawMessage(`1`), "temp:y": json.RawMessage(`2`)})
	if len(s.App) != 1 || len(s.Session) != 1 || s.Session["temp:y"] == nil {
		t.Fatalf("custom prefixes: %+v (an empty Temp prefix drops nothing)", s)
	}
	if s := (StatePrefixes{}).Split(map[string]json.RawMessage{"app:x": json.RawMessage(`1`)}); len(s.Session) != 1 {
		t.Fatalf("empty prefixes must keep every key in session state: %+v", s)
	}
}

func TestScopedStateValidateAndClone(t *testing.T) {
	ok := ScopedState{App: map[string]json.RawMessage{"": json.RawMessage(`null`)}}
	if err := ok.Validate("state"); err != nil {
		t.Fatalf("valid state refused: %v", err)
	}
	for name, s := range map[string]ScopedState{
		"bad json":    {Session: map[string]json.RawMessage{"k": json.RawMessage(`{`)}},
		"empty value": {User: map[string]json.RawMessage{"k": nil}},
		"bad utf8":    {App: map[string]json.RawMessage{"k": json.RawMessage("\"\xff\"")}},
		"nul key":     {App: map[string]json.RawMessage{"a\x00": json.RawMessage(`1`)}},
	} {
		var ie *InvalidInputError
		if err := s.Validate("state"); !errors.As(err, &ie) || ie.Field == "" {
			t.Errorf("%s: %v, want an *InvalidInputError naming the scope", name, err)
		}
	}
	orig := ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`[1]`)}}
	c := orig.Clone()
	c.Session["k"][1] = '2'
	c.Session["n"] = json.RawMessage(`0`)
	if string(orig.Session["k"]) != "[1]" || len(orig.Session) != 1 {
		t.Fatalf("Clone shares memory with the original: %s", orig.Session["k"])
	}
	if (ScopedState{}).Clone().Session != nil {
		t.Fatal("Clone of nil scopes must stay nil")
	}
}
