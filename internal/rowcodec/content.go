package rowcodec

import (
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

// DecodeContent parses the stored form of a message's content: a JSON
// array of content blocks, each an object with a type (what
// store.ValidateMessage returns). Each block is decoded by
// store.ContentBlock.UnmarshalJSON, which validates it; this function only
// finds where blocks start and end, and checks the array around them, so
// the input is validated once in all.
func DecodeContent(data []byte) ([]store.ContentBlock, error) {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '[' {
		return nil, errors.New("content is not an array")
	}
	blocks := make([]store.ContentBlock, 0, 2)
	if i = skipSpace(data, i+1); i < len(data) && data[i] == ']' {
		return blocks, end(data, i+1)
	}
	for {
		j, err := objectEnd(data, i)
		if err != nil {
			return nil, fmt.Errorf("content block %d: %w", len(blocks), err)
		}
		var b store.ContentBlock
		if err := b.UnmarshalJSON(data[i:j]); err != nil {
			return nil, fmt.Errorf("content block %d: %w", len(blocks), err)
		}
		if b.Type == "" {
			return nil, fmt.Errorf("content block %d has no type", len(blocks))
		}
		blocks = append(blocks, b)
		switch i = skipSpace(data, j); {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == ']':
			return blocks, end(data, i+1)
		default:
			return nil, errors.New("malformed content array")
		}
	}
}

// skipSpace returns the position of the first byte at or after i that is
// not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// end checks that only white space follows position i.
func end(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return errors.New("content has trailing data")
	}
	return nil
}

// objectEnd returns the end of the object that starts at data[i]: the
// position after the brace that closes it, matching brackets outside
// strings. It does not validate what lies in between (the block decoder
// does), but never reads past data.
func objectEnd(data []byte, i int) (int, error) {
	if i >= len(data) || data[i] != '{' {
		return 0, errors.New("content block is not an object")
	}
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errors.New("content block is not terminated")
}
