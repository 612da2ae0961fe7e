package rowcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// referenceDecode is DecodeContent written with encoding/json: it splits
// the array with json.Unmarshal and decodes each block on its own. The fuzz
// test holds DecodeContent's splitting to it (store's FuzzUnmarshalContentBlock
// covers the blocks themselves).
func referenceDecode(data []byte) ([]store.ContentBlock, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, err
	}
	if elems == nil {
		return nil, errors.New("not an array")
	}
	out := make([]store.ContentBlock, len(elems))
	for i, raw := range elems {
		if err := out[i].UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		if out[i].Type == "" {
			return nil, fmt.Errorf("block %d has no type", i)
		}
	}
	return out, nil
}

func TestDecodeContent(t *testing.T) {
	blocks := []store.ContentBlock{
		store.TextBlock("hi \"there\""),
		store.ToolUseBlock("id1", "bash", json.RawMessage(`{"cmd":"echo }]"}`)),
		store.ToolResultBlock("id1", "out", false),
		{Type: "image", Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64","data":"AA=="}`)}},
	}
	for _, content := range [][]store.ContentBlock{nil, blocks} {
		stored, err := store.ValidateMessage("m", &store.Message{Role: store.RoleAssistant, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeContent(stored)
		if err != nil {
			t.Fatalf("DecodeContent(%s): %v", stored, err)
		}
		if got == nil || len(got) != len(content) {
			t.Fatalf("DecodeContent(%s) = %#v", stored, got)
		}
		again, _ := json.Marshal(got)
		if !bytes.Equal(again, stored) {
			t.Fatalf("decoded %s, stored %s", again, stored)
		}
	}
	for _, bad := range []string{
		``, `null`, `{}`, `[`, `[{"type":"text"}`, `[{"type":"text"},]`, `[{"type":"text"} {"type":"text"}]`,
		`[{"type":"text"}] x`, `[{"text":"no type"}]`, `[null]`, `[1]`, `[{"type":"text","text":"\`, `[{"a":[}]}]`,
		`[{"type":"text"}]]`, "\ufeff[]",
	} {
		if got, err := DecodeContent([]byte(bad)); err == nil {
			t.Errorf("DecodeContent(%q) = %#v, want an error", bad, got)
		}
	}
}

func FuzzDecodeContent(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"type":"text","text":"hi"}]`, ` [ { "type" : "text" , "text" : "a\"b\\" } ] `,
		`[{"type":"tool_use","id":"1","name":"bash","input":{"a":[1,{"b":"}"}],"c":null}}]`,
		`[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"x"}],"is_error":true,"trust":"external"}]`,
		`[{"type":"image","source":{"type":"base64","data":"AA=="}},{"type":"text","text":"\u00e9\n"}]`,
		`[{"type":"text","text":"a","text":"b"}]`, `[{"Type":"text"}]`, `[null]`, `[1]`, `{}`, `[{"type":5}]`,
		`[{"type":"x","is_error":"yes"}]`, `[{"type":"x","k":-1.5e3,"l":true,"m":false}]`, `[{"a":[}]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeContent(data)
		want, werr := referenceDecode(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodeContent error %v, reference error %v", err, werr)
		}
		if err != nil {
			return
		}
		g, gerr := json.Marshal(got)
		w, wErr := json.Marshal(want)
		if (gerr == nil) != (wErr == nil) {
			t.Fatalf("marshal: %v vs %v", gerr, wErr)
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("DecodeContent %s\nreference %s", g, w)
		}
	})
}
