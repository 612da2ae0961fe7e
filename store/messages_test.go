package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// referenceDecode is DecodeContent written with encoding/json maps: slower,
// obviously right. The fuzz test holds the scanner to it.
func referenceDecode(data []byte) ([]ContentBlock, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("not an array")
	}
	out := make([]ContentBlock, len(raw))
	for i, m := range raw {
		if m == nil {
			return nil, errors.New("null block")
		}
		for k, v := range m {
			if err := out[i].setMember(k, v); err != nil {
				return nil, err
			}
		}
		if out[i].Type == "" {
			return nil, fmt.Errorf("block %d has no type", i)
		}
	}
	return out, nil
}

func FuzzDecodeContent(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"type":"text","text":"hi"}]`, ` [ { "type" : "text" , "text" : "a\"b\\" } ] `,
		`[{"type":"tool_use","id":"1","name":"bash","input":{"a":[1,{"b":"}"}],"c":null}}]`,
		`[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"x"}],"is_error":true,"trust":"external"}]`,
		`[{"type":"image","source":{"type":"base64","data":"AA=="}},{"type":"text","text":"\u00e9\n"}]`,
		`[{"type":"text","text":"a","text":"b"}]`, `[{"Type":"text"}]`, `[null]`, `[1]`, `{}`, `[{"type":5}]`,
		`[{"type":"x","is_error":"yes"}]`, `[{"type":"x","k":-1.5e3,"l":true,"m":false}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeContent(data)
		want, werr := referenceDecode(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("scanner error %v, reference error %v", err, werr)
		}
		if err != nil {
			return
		}
		g, gerr := json.Marshal(got)
		w, wErr := json.Marshal(want)
		if gerr != nil || wErr != nil {
			if (gerr == nil) != (wErr == nil) {
				t.Fatalf("marshal: %v vs %v", gerr, wErr)
			}
			return
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("scanner %s\nreference %s", g, w)
		}
	})
}
