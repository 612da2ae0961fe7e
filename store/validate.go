package store

import (
	"strings"
	"unicode/utf8"
)

// ValidateID checks an opaque identifier (session, agent or request id): not
// empty, at most MaxIDLength bytes, valid UTF-8, no NUL or other control
// characters. Ids are data: "session/a" and "../x" are valid and are never
// used as paths.
func ValidateID(field, id string) error {
	switch {
	case id == "":
		return Invalid(field, "must not be empty")
	case len(id) > MaxIDLength:
		return Invalid(field, "too long")
	case !utf8.ValidString(id):
		return Invalid(field, "must be valid UTF-8")
	case strings.ContainsFunc(id, isControl):
		return Invalid(field, "must not contain control characters")
	}
	return nil
}

// ValidateToolName checks a tool or credential name: 1 to MaxToolNameLength
// bytes of ASCII letters, digits and the punctuation _ - . : / @ +. The
// wildcard "*" is only valid in an allow-list and is checked by the caller.
func ValidateToolName(field, name string) error {
	if name == "" {
		return Invalid(field, "tool name must not be empty")
	}
	if len(name) > MaxToolNameLength {
		return Invalid(field, "tool name too long")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_-.:/@+", c) >= 0:
		default:
			return Invalid(field, "tool name has a character outside [A-Za-z0-9_-.:/@+]")
		}
	}
	return nil
}

func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
