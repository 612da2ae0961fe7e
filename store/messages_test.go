package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// referenceBlock is ContentBlock.UnmarshalJSON written with encoding/json's
// tokenizer: slower, obviously right. Members are applied in order, as the
// scanner applies them, so a duplicate key's earlier value is checked too.
// The fuzz test holds the scanner to it.
func referenceBlock(data []byte) (ContentBlock, error) {
	var b ContentBlock
	if !json.Valid(data) {
		return b, errors.New("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return b, errors.New("not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return b, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return b, err
		}
		if err := b.setMember(key, v); err != nil {
			return b, err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return b, errors.New("malformed object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return b, errors.New("trailing data")
	}
	return b, nil
}

// FuzzUnmarshalContentBlock holds the scanner of ContentBlock.UnmarshalJSON
// to referenceBlock. Inputs are arrays (the stored form of a message's
// content); each element is unmarshalled on its own, and input that is not
// an array is tried as one block.
func FuzzUnmarshalContentBlock(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"type":"text","text":"hi"}]`, ` [ { "type" : "text" , "text" : "a\"b\\" } ] `,
		`[{"type":"tool_use","id":"1","name":"bash","input":{"a":[1,{"b":"}"}],"c":null}}]`,
		`[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"x"}],"is_error":true,"trust":"external"}]`,
		`[{"type":"image","source":{"type":"base64","data":"AA=="}},{"type":"text","text":"\u00e9\n"}]`,
		`[{"type":"text","text":"a","text":"b"}]`, `[{"type":5,"type":"x"}]`, `[{"Type":"text"}]`, `[null]`, `[1]`, `{}`,
		`[{"type":5}]`, `[{"type":"x","is_error":"yes"}]`, `[{"type":"x","k":-1.5e3,"l":true,"m":false}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			elems = []json.RawMessage{data}
		}
		for _, raw := range elems {
			var got ContentBlock
			err := got.UnmarshalJSON(raw)
			want, werr := referenceBlock(raw)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%s: scanner error %v, reference error %v", raw, err, werr)
			}
			if err != nil {
				continue
			}
			g, gerr := json.Marshal(got)
			w, wErr := json.Marshal(want)
			if (gerr == nil) != (wErr == nil) {
				t.Fatalf("marshal: %v vs %v", gerr, wErr)
			}
			if !bytes.Equal(g, w) {
				t.Fatalf("scanner %s\nreference %s", g, w)
			}
		}
	})
}
