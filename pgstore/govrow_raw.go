package pgstore

import (
	"encoding/binary"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// govColumnKind is how a column of govColumns is stored: text, bigint or
// text[].
type govColumnKind uint8

const (
	govText govColumnKind = iota
	govInt
	govTextArray
)

// govKinds is the kind of each column of govColumns, in their order
// (TestGovRowRawAsScan checks it against govRowScan on the server's rows).
var govKinds = [...]govColumnKind{
	govText, govText, govTextArray, govText, govTextArray, // id … authorized_tools
	govTextArray, govInt, govInt, govInt, govInt, // authorized_credentials … rate_limit
	govInt, govInt, govInt, govText, govText, // rate_window_ms … status
	govInt, govInt, // created_at_ms, expires_at_ms
}

// govRowRaw decodes a row of govColumns from its wire values, as
// govRowScan would, with two allocations whatever the row holds: one
// string that holds the text of its text columns and of its arrays'
// elements, which each field's string is a part of, and one slice of
// strings that its three arrays are parts of (each with its capacity cut
// at its length, so that an append to one copies rather than overwrites
// the next). A governed Use returns a row per call, and pgx's Scan, which
// allocates each string, each array and the array's decoding state, cost
// a batch's leader more than the rest of reading its answer. ok is false
// when the row is not as expected (another number of columns, another
// type, an array in text format, of several dimensions or with a NULL, a
// NULL column): the caller then scans it with pgx, which decodes it or
// says why not.
func govRowRaw(fds []pgconn.FieldDescription, vals [][]byte) (r govRow, ok bool) {
	if len(fds) != len(govKinds) || len(vals) != len(govKinds) {
		return r, false
	}
	text, elems := 0, 0
	for i, k := range govKinds {
		v, fd := vals[i], fds[i]
		if v == nil {
			return r, false
		}
		switch k {
		case govText:
			if fd.DataTypeOID != pgtype.TextOID {
				return r, false
			}
			text += len(v)
		case govInt:
			if fd.DataTypeOID != pgtype.Int8OID || fd.Format != pgtype.BinaryFormatCode || len(v) != 8 {
				return r, false
			}
		case govTextArray:
			if fd.DataTypeOID != pgtype.TextArrayOID || fd.Format != pgtype.BinaryFormatCode {
				return r, false
			}
			n, size, ok := textArrayShape(v)
			if !ok {
				return r, false
			}
			elems, text = elems+n, text+size
		}
	}
	var sb strings.Builder
	sb.Grow(text)
	// Where each piece of text ends in sb: each text column's, then each
	// element of an array, in the columns' order; and how many elements
	// each array has.
	var endsBuf [32]int
	ends := endsBuf[:0]
	var counts [len(govKinds)]int
	for i, k := range govKinds {
		switch k {
		case govText:
			sb.Write(vals[i])
			ends = append(ends, sb.Len())
		case govTextArray:
			counts[i] = eachTextElem(vals[i], func(e []byte) {
				sb.Write(e)
				ends = append(ends, sb.Len())
			})
		}
	}
	all := sb.String()
	strs := make([]string, elems)
	pos, piece, e := 0, 0, 0
	next := func() string {
		s := all[pos:ends[piece]]
		pos = ends[piece]
		piece++
		return s
	}
	str := func(dst *string) { *dst = next() }
	arr := func(dst *[]string, i int) {
		first := e
		for range counts[i] {
			strs[e] = next()
			e++
		}
		*dst = strs[first:e:e]
	}
	num := func(dst *int64, i int) { *dst = int64(binary.BigEndian.Uint64(vals[i])) }
	str(&r.ID)
	str(&r.AgentID)
	arr(&r.DelegationChain, 2)
	str(&r.DeclaredIntent)
	arr(&r.AuthorizedTools, 4)
	arr(&r.AuthorizedCredentials, 5)
	num(&r.TimeLimitMS, 6)
	num(&r.CallBudget, 7)
	num(&r.CallsMade, 8)
	num(&r.RateLimit, 9)
	num(&r.RateWindowMS, 10)
	num(&r.RateWindowStartMS, 11)
	num(&r.RateWindowCalls, 12)
	str(&r.Sensitivity)
	str(&r.Status)
	num(&r.CreatedAtMS, 15)
	num(&r.ExpiresAtMS, 16)
	return r, true
}

// textArrayShape reads the header of a text[] in PostgreSQL's binary
// format (array_send: dimensions, a flag of NULLs, the element type, each
// dimension's length and lower bound, then each element's length and
// bytes) and returns its number of elements and their bytes in all; ok is
// false unless it is an array of at most one dimension, with no NULL, of
// text, whose elements fill it exactly.
func textArrayShape(v []byte) (n, size int, ok bool) {
	if len(v) < 12 {
		return 0, 0, false
	}
	dims := binary.BigEndian.Uint32(v)
	if binary.BigEndian.Uint32(v[4:]) != 0 || binary.BigEndian.Uint32(v[8:]) != pgtype.TextOID {
		return 0, 0, false
	}
	switch dims {
	case 0:
		return 0, 0, len(v) == 12
	case 1:
	default:
		return 0, 0, false
	}
	if len(v) < 20 {
		return 0, 0, false
	}
	count := binary.BigEndian.Uint32(v[12:])
	if count > uint32(len(v)) {
		return 0, 0, false
	}
	rest := v[20:]
	for range count {
		if len(rest) < 4 {
			return 0, 0, false
		}
		l := binary.BigEndian.Uint32(rest)
		if l > uint32(len(rest)-4) { // also a NULL's -1
			return 0, 0, false
		}
		size += int(l)
		rest = rest[4+l:]
	}
	return int(count), size, len(rest) == 0
}

// eachTextElem calls fn with each element of v, a text[] that
// textArrayShape accepted, and returns their number.
func eachTextElem(v []byte, fn func([]byte)) int {
	if binary.BigEndian.Uint32(v) == 0 {
		return 0
	}
	count := int(binary.BigEndian.Uint32(v[12:]))
	rest := v[20:]
	for range count {
		l := binary.BigEndian.Uint32(rest)
		fn(rest[4 : 4+l])
		rest = rest[4+l:]
	}
	return count
}
