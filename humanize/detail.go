package humanize

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// The moneyKeys of an object whose "metric" is "cost" are amounts of its
// currency in micro-units (a spend limit refusal, a limit of the limits
// event).
var moneyKeys = []string{"limit", "spent", "reserved", "requested"}

// AuditDetail renders the detail of an audit event (JSON as the store
// records it) for people and for the JSON of the CLI and the console:
// money kept in integer micro-units is written as an exact decimal with
// its currency ("cost_micros": 20000 becomes "cost": "0.02 USD", and the
// limit, spent, reserved and requested of a cost metric likewise), a time
// kept as Unix milliseconds ("expires_at_ms") becomes an RFC 3339 UTC time
// ("expires_at"), and the window start of a lifetime window (the Unix
// epoch, no start at all) is left out. Keys keep their order; durations in
// *_ms fields stay milliseconds. Text that is not a JSON object is
// returned as it is.
func AuditDetail(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return raw
	}
	o, ok := v.(*object)
	if !ok {
		return raw
	}
	o.render("")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return raw
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// object is a JSON object that keeps the order of its keys.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// rename replaces key from with to, in its place, with value v.
func (o *object) rename(from, to string, v any) {
	if _, ok := o.vals[to]; ok {
		return
	}
	for i, k := range o.keys {
		if k == from {
			o.keys[i] = to
		}
	}
	delete(o.vals, from)
	o.vals[to] = v
}

func (o *object) remove(key string) {
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
	delete(o.vals, key)
}

func (o *object) str(key string) string {
	s, _ := o.vals[key].(string)
	return s
}

// render rewrites o and what it holds; currency is the enclosing
// object's, for amounts that do not name their own.
func (o *object) render(currency string) {
	if c := o.str("currency"); c != "" {
		currency = c
	}
	for _, k := range append([]string(nil), o.keys...) {
		switch v := o.vals[k].(type) {
		case *object:
			v.render(currency)
		case []any:
			for _, e := range v {
				if eo, ok := e.(*object); ok {
					eo.render(currency)
				}
			}
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				continue
			}
			switch {
			case strings.HasSuffix(k, "_micros") && currency != "":
				o.rename(k, strings.TrimSuffix(k, "_micros"), Money(n, currency))
			case strings.HasSuffix(k, "_at_ms"):
				o.rename(k, strings.TrimSuffix(k, "_ms"), Time(time.UnixMilli(n)))
			}
		}
	}
	if o.str("metric") == "cost" && currency != "" {
		for _, k := range moneyKeys {
			if n, ok := o.vals[k].(json.Number); ok {
				if m, err := n.Int64(); err == nil {
					o.vals[k] = Money(m, currency)
				}
			}
		}
	}
	if ws := o.str("window_start"); ws != "" && (o.str("window") == "lifetime" || isEpoch(ws)) {
		o.remove("window_start")
	}
}

// isEpoch reports whether s is an RFC 3339 time at the Unix epoch, the
// window start of a window that has none.
func isEpoch(s string) bool {
	t, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && t.Unix() == 0 && t.Nanosecond() == 0
}

// MarshalJSON writes o with its keys in order.
func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := marshalNoEscape(o.vals[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// decodeOrdered reads one JSON value, its objects as *object.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
	}
	return tok, nil
}
