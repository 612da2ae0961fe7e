//go:build goexperiment.jsonv2

package adk

import (
	jsonv1 "encoding/json"
	jsonv2 "encoding/json/v2"

	"google.golang.org/adk/v2/session"
)

// plainEvent is session.Event without its UnmarshalJSON method (which
// calls encoding/json v1), so that v2 decodes it itself.
type plainEvent session.Event

// The toolchain's encoding/json/v2 as a candidate decoder: with its own
// semantics (exact-case names, duplicate names and invalid UTF-8
// refused), and with v1's (the semantics the stored events are read
// with today; what a drop-in replacement would have to use).
func init() {
	benchDecoders = append(benchDecoders,
		benchDecoder{"json-v2", func(data []byte, ev *session.Event) error {
			return jsonv2.Unmarshal(data, (*plainEvent)(ev))
		}},
		benchDecoder{"json-v2-v1-options", func(data []byte, ev *session.Event) error {
			return jsonv2.Unmarshal(data, (*plainEvent)(ev), jsonv1.DefaultOptionsV1())
		}},
	)
}
