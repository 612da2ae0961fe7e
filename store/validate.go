package store

import (
	"strings"
	"unicode"
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

// ValidateName checks a name that is compared exactly and must never be
// mistaken for another: an agent id (also in a delegation chain) or a
// request id. It is an id (see ValidateID: 1 to MaxIDLength bytes of valid
// UTF-8) without any control character (U+0000–U+001F, U+007F–U+009F) and
// without white space (Unicode White_Space: space, tab, no-break space,
// ...) at its start or end. Inner spaces are allowed: "agent 7" is valid,
// "agent-7 " is not. The store never trims a name: a value with a stray
// space is refused, so that it is never counted as another one.
func ValidateName(field, name string) error {
	if err := ValidateID(field, name); err != nil {
		return err
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return Invalid(field, "must not contain control characters")
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return Invalid(field, "must not begin or end with white space")
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
