package tensor

// JSON "data" arrays of the REST protocol. See the package documentation for
// how each datatype is written.
//
// The decoder is a hand-written byte scanner rather than encoding/json into
// []any: it parses each element straight into the typed slice, keeps 64-bit
// integers exact, bounds nesting without recursion and bounds allocation by
// the size of the input rather than by the declared shape.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// MaxJSONDepth is the deepest array nesting DecodeJSONData accepts.
const MaxJSONDepth = 64

// The strings that stand for the IEEE specials in JSON, which has no literal
// for them. MLServer and Python's json module use the same names (Python
// writes them unquoted, which is not JSON).
const (
	jsonNaN    = "NaN"
	jsonPosInf = "Infinity"
	jsonNegInf = "-Infinity"
)

// DecodeJSONData parses the JSON value of a REST "data" field (nested or
// flat arrays) into the Go slice type of d, checking that it holds exactly
// the element count of shape. Decoding stops with an error as soon as more
// elements than that count are seen, and allocates at most maxElements
// elements (maxElements <= 0 means no limit beyond the shape), so a hostile
// body cannot make it allocate without bound. Nesting deeper than
// MaxJSONDepth is an error.
//
// The value must be a JSON array. Only the total number of elements is
// checked, not how they are nested: [[1,2,3],[4]] is accepted for shape
// [2,2], as Triton does (the spec leaves ragged nesting undefined).
// Allocation is bounded by len(data) as well, never by the shape alone.
//
// Accepted elements, by datatype:
//   - BOOL: true and false only.
//   - Integer types: JSON integers, parsed exactly (INT64/UINT64 beyond 2^53
//     do not lose precision). A number written with a fraction or exponent is
//     accepted when its value is an integer (2.0, 1e2); a fractional or
//     out-of-range value is an error, never truncated.
//   - FP32, FP64: any JSON number, rounded to nearest; a finite number too
//     large for the type is an error. The strings "NaN", "Infinity" and
//     "-Infinity" stand for the IEEE specials.
//   - FP16, BF16: as FP32, then rounded to nearest-even 16 bits; a finite
//     number that rounds to infinity is an error.
//   - BYTES: JSON strings, whose UTF-8 bytes are the element. Strings must be
//     valid UTF-8 and escapes valid (unpaired surrogates are errors). The
//     elements are copies that share one backing array, never aliases of
//     data.
//
// Anything else (null, objects, strings for numeric types, numbers for BYTES)
// is an error naming the element index.
func DecodeJSONData(d Datatype, shape []int64, data []byte, maxElements int64) (any, error) {
	v, _, err := decodeJSONData(d, shape, data, maxElements, false)
	return v, err
}

// DecodeJSONDataPrefix is DecodeJSONData for a JSON array at the start of
// data followed by anything: it decodes the array, does not look past its
// closing bracket, and returns the number of bytes it took. It lets a
// decoder of a whole message convert a "data" member in the pass that finds
// its end. The elements are those DecodeJSONData gives for data[:n].
func DecodeJSONDataPrefix(d Datatype, shape []int64, data []byte, maxElements int64) (v any, n int, err error) {
	return decodeJSONData(d, shape, data, maxElements, true)
}

func decodeJSONData(d Datatype, shape []int64, data []byte, maxElements int64, prefix bool) (any, int, error) {
	if !d.Valid() {
		return nil, 0, fmt.Errorf("unknown datatype %q", d)
	}
	count, err := ElementCount(shape)
	if err != nil {
		return nil, 0, err
	}
	if maxElements > 0 && count > maxElements {
		return nil, 0, fmt.Errorf("shape %v has %d elements, more than the limit of %d", shape, count, maxElements)
	}
	// Every element takes at least one byte plus a separator, so the input
	// cannot hold more than len(data)/2+1 of them whatever the shape claims.
	capacity := min(count, int64(len(data)/2+1))
	if maxElements > 0 {
		capacity = min(capacity, maxElements)
	}
	s := &jsonScanner{data: data, dtype: d, shape: shape, count: count, prefix: prefix}
	c := int(capacity)
	var out any
	switch d {
	case Bool:
		out, err = decodeElements(s, c, s.parseBool)
	case Uint8:
		out, err = decodeElements(s, c, func(k tokenKind) (uint8, error) {
			v, err := s.parseUint(k, 8)
			return uint8(v), err
		})
	case Uint16:
		out, err = decodeElements(s, c, func(k tokenKind) (uint16, error) {
			v, err := s.parseUint(k, 16)
			return uint16(v), err
		})
	case Uint32:
		out, err = decodeElements(s, c, func(k tokenKind) (uint32, error) {
			v, err := s.parseUint(k, 32)
			return uint32(v), err
		})
	case Uint64:
		out, err = decodeElements(s, c, func(k tokenKind) (uint64, error) {
			return s.parseUint(k, 64)
		})
	case Int8:
		out, err = decodeElements(s, c, func(k tokenKind) (int8, error) {
			v, err := s.parseInt(k, 8)
			return int8(v), err
		})
	case Int16:
		out, err = decodeElements(s, c, func(k tokenKind) (int16, error) {
			v, err := s.parseInt(k, 16)
			return int16(v), err
		})
	case Int32:
		out, err = decodeElements(s, c, func(k tokenKind) (int32, error) {
			v, err := s.parseInt(k, 32)
			return int32(v), err
		})
	case Int64:
		out, err = decodeElements(s, c, func(k tokenKind) (int64, error) {
			return s.parseInt(k, 64)
		})
	case FP16:
		out, err = decodeElements(s, c, func(k tokenKind) (Float16, error) {
			f, err := s.parseFloat(k, 32)
			h := Float16FromFloat32(float32(f))
			if err == nil && h&0x7fff == 0x7c00 && !math.IsInf(f, 0) {
				err = s.errorf("%s overflows FP16", s.shown())
			}
			return h, err
		})
	case BF16:
		out, err = decodeElements(s, c, func(k tokenKind) (BFloat16, error) {
			f, err := s.parseFloat(k, 32)
			h := BFloat16FromFloat32(float32(f))
			if err == nil && h&0x7fff == 0x7f80 && !math.IsInf(f, 0) {
				err = s.errorf("%s overflows BF16", s.shown())
			}
			return h, err
		})
	case FP32:
		out, err = decodeElements(s, c, func(k tokenKind) (float32, error) {
			f, err := s.parseFloat(k, 32)
			return float32(f), err
		})
	case FP64:
		out, err = decodeElements(s, c, func(k tokenKind) (float64, error) {
			return s.parseFloat(k, 64)
		})
	case Bytes:
		out, err = decodeElements(s, c, s.parseBytes)
	}
	if err != nil {
		return nil, 0, err
	}
	return out, s.pos, nil
}

// decodeElements runs the scanner over the whole value, converting each
// scalar with parse. capacity is already bounded, so append never grows.
func decodeElements[T any](s *jsonScanner, capacity int, parse func(tokenKind) (T, error)) ([]T, error) {
	v := make([]T, 0, capacity)
	for {
		k, err := s.next()
		if err != nil {
			return nil, err
		}
		if k == tokEnd {
			break
		}
		if int64(len(v)) >= s.count {
			return nil, fmt.Errorf("data has more than %d elements, shape %v needs %d", s.count, s.shape, s.count)
		}
		e, err := parse(k)
		if err != nil {
			return nil, err
		}
		v = append(v, e)
		s.index++
	}
	if !s.prefix {
		for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
			s.pos++
		}
		if s.pos < len(s.data) {
			return nil, fmt.Errorf("offset %d: unexpected %s after the data array", s.pos, describeByte(s.data[s.pos]))
		}
	}
	if int64(len(v)) != s.count {
		return nil, fmt.Errorf("data has %d elements, shape %v needs %d", len(v), s.shape, s.count)
	}
	return v, nil
}

type tokenKind uint8

const (
	tokEnd    tokenKind = iota // the outermost array closed
	tokNumber                  // s.start:s.end is the number
	tokString                  // s.start:s.end is the contents between the quotes
	tokTrue
	tokFalse
	tokNull
)

// Scanner states: what may come next.
const (
	stBegin = iota // the opening '[' of the whole value
	stOpen         // just after '[': an element, '[' or ']'
	stComma        // just after ',': an element or '['
	stAfter        // after an element or ']': ',' or ']'
	stDone         // the outermost array closed
)

// jsonScanner walks nested JSON arrays and stops at each scalar. Nesting is
// tracked by a counter, not by recursion, so depth costs no stack.
type jsonScanner struct {
	data  []byte
	pos   int
	depth int
	state int

	// The current scalar token.
	start, end int
	integer    bool // a number without fraction or exponent
	// A number's value is (-1 if neg) × mant × 10^exp10, when exact.
	mant    uint64
	exp10   int
	neg     bool
	exact   bool
	escaped bool // a string containing backslash escapes

	dtype Datatype
	shape []int64
	count int64
	index int // index of the element being parsed, for messages

	arena []byte // backing store for decoded BYTES elements

	prefix bool // stop at the end of the array (DecodeJSONDataPrefix)
}

// next advances to the next scalar element and returns its kind, or tokEnd
// once the outermost array has closed.
func (s *jsonScanner) next() (tokenKind, error) {
	d := s.data
	// The common case of a flat numeric array: a comma right after the
	// element, then a number.
	if s.state == stAfter && s.pos+1 < len(d) && d[s.pos] == ',' {
		if c := d[s.pos+1]; c == '-' || isDigit(c) {
			s.pos++
			return tokNumber, s.scanNumber()
		}
	}
	for {
		for s.pos < len(d) && isSpace(d[s.pos]) {
			s.pos++
		}
		if s.state == stDone {
			return tokEnd, nil
		}
		if s.pos >= len(d) {
			if s.state == stBegin {
				return 0, fmt.Errorf("data is empty, want a JSON array")
			}
			return 0, fmt.Errorf("offset %d: unexpected end of data inside an array", s.pos)
		}
		c := d[s.pos]
		switch s.state {
		case stBegin:
			if c != '[' {
				return 0, fmt.Errorf("data must be a JSON array, found %s", describeByte(c))
			}
			if err := s.open(); err != nil {
				return 0, err
			}
		case stAfter:
			switch c {
			case ',':
				s.pos++
				s.state = stComma
			case ']':
				if s.close() {
					return tokEnd, nil
				}
			default:
				return 0, fmt.Errorf("offset %d: expected ',' or ']', found %s", s.pos, describeByte(c))
			}
		default: // stOpen, stComma
			switch c {
			case '[':
				if err := s.open(); err != nil {
					return 0, err
				}
				continue
			case ']':
				if s.state == stComma {
					return 0, fmt.Errorf("offset %d: ']' after ','", s.pos)
				}
				if s.close() {
					return tokEnd, nil
				}
				continue
			}
			k, err := s.scalar(c)
			if err != nil {
				return 0, err
			}
			s.state = stAfter
			return k, nil
		}
	}
}

func (s *jsonScanner) open() error {
	s.depth++
	if s.depth > MaxJSONDepth {
		return fmt.Errorf("offset %d: arrays nested deeper than %d", s.pos, MaxJSONDepth)
	}
	s.pos++
	s.state = stOpen
	return nil
}

// close consumes a ']' and reports whether it closed the outermost array.
func (s *jsonScanner) close() bool {
	s.pos++
	s.depth--
	if s.depth == 0 {
		s.state = stDone
		return true
	}
	s.state = stAfter
	return false
}

// scalar scans the token starting with c at s.pos.
func (s *jsonScanner) scalar(c byte) (tokenKind, error) {
	switch {
	case c == '"':
		return tokString, s.scanString()
	case c == '-' || '0' <= c && c <= '9':
		return tokNumber, s.scanNumber()
	case c == 't':
		return tokTrue, s.literal("true")
	case c == 'f':
		return tokFalse, s.literal("false")
	case c == 'n':
		return tokNull, s.literal("null")
	case c == '{':
		return 0, s.errorf("found an object, want %s for %s", s.want(), s.dtype)
	}
	return 0, fmt.Errorf("offset %d: element %d: unexpected %s", s.pos, s.index, describeByte(c))
}

func (s *jsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return fmt.Errorf("offset %d: element %d: invalid literal, want %s", s.pos, s.index, word)
	}
	s.start, s.end = s.pos, s.pos+len(word)
	s.pos += len(word)
	return nil
}

// scanNumber scans a number with the exact JSON grammar, so strconv never
// sees forms it accepts but JSON does not (hex, underscores, "inf", "+1").
// On the way it accumulates the decimal value as mant × 10^exp10 for the
// strconv-free conversions (parseInt, parseUint, parseFloat); exact is false
// when the significant digits do not fit in mant.
func (s *jsonScanner) scanNumber() error {
	d := s.data
	i := s.pos
	start := i
	var mant uint64
	nd, exp10, exact := 0, 0, true // nd: significant digits in mant
	neg := d[i] == '-'
	if neg {
		i++
	}
	switch {
	case i >= len(d):
		return s.badNumber(start, i)
	case d[i] == '0':
		i++
	case '1' <= d[i] && d[i] <= '9':
		for ; i < len(d); i++ {
			c := d[i] - '0'
			if c > 9 {
				break
			}
			if nd < 19 {
				mant = mant*10 + uint64(c)
				nd++
			} else {
				exp10++ // a dropped integer digit
				exact = exact && c == 0
			}
		}
	default:
		return s.badNumber(start, i)
	}
	integer := true
	if i < len(d) && d[i] == '.' {
		integer = false
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return s.badNumber(start, i)
		}
		if mant == 0 { // leading zeros of the fraction
			for i < len(d) && d[i] == '0' {
				exp10--
				i++
			}
		}
		for ; i < len(d); i++ {
			c := d[i] - '0'
			if c > 9 {
				break
			}
			if nd < 19 {
				mant = mant*10 + uint64(c)
				nd++
				exp10--
			} else {
				exact = exact && c == 0
			}
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		eneg := false
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			eneg = d[i] == '-'
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return s.badNumber(start, i)
		}
		e := 0
		for i < len(d) && isDigit(d[i]) {
			if e < 100000 { // saturate: far beyond any float's range
				e = e*10 + int(d[i]-'0')
			}
			i++
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	s.start, s.end, s.integer = start, i, integer
	s.mant, s.exp10, s.neg, s.exact = mant, exp10, neg, exact
	s.pos = i
	return nil
}

// badNumber reports an invalid number from start whose grammar broke at i.
func (s *jsonScanner) badNumber(start, i int) error {
	end := min(i+1, len(s.data))
	return fmt.Errorf("offset %d: element %d: invalid number %s", start, s.index, quoteToken(s.data[start:end]))
}

// scanString finds the end of a string; escapes and UTF-8 are checked when
// the contents are decoded.
func (s *jsonScanner) scanString() error {
	d := s.data
	i := s.pos + 1
	escaped := false
	for {
		if i >= len(d) {
			return fmt.Errorf("offset %d: element %d: unterminated string", s.pos, s.index)
		}
		c := d[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			escaped = true
			i += 2
			continue
		}
		if c < 0x20 {
			return fmt.Errorf("offset %d: element %d: control character 0x%02x in string", i, s.index, c)
		}
		i++
	}
	s.start, s.end, s.escaped = s.pos+1, i, escaped
	s.pos = i + 1
	return nil
}

// token returns the current token without copying. The string must not
// outlive the call that uses it, as data may be reused by the caller.
func (s *jsonScanner) token() string {
	if s.end == s.start {
		return ""
	}
	return unsafe.String(&s.data[s.start], s.end-s.start)
}

// shown is the current token for an error message, quoted if a string and
// shortened if long.
func (s *jsonScanner) shown() string {
	return quoteToken(s.data[s.start:s.end])
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("element %d: "+format, append([]any{s.index}, args...)...)
}

// want names what the datatype accepts, for messages.
func (s *jsonScanner) want() string {
	switch s.dtype {
	case Bool:
		return "true or false"
	case Bytes:
		return "a string"
	}
	return "a number"
}

// wrongKind reports a token of the wrong kind for the datatype.
func (s *jsonScanner) wrongKind(k tokenKind) error {
	var found string
	switch k {
	case tokNumber:
		found = "number " + s.shown()
	case tokString:
		found = "string " + strconv.Quote(shorten(string(s.data[s.start:s.end])))
	case tokTrue:
		found = "true"
	case tokFalse:
		found = "false"
	case tokNull:
		found = "null"
	}
	return s.errorf("found %s, want %s for %s", found, s.want(), s.dtype)
}

func (s *jsonScanner) parseBool(k tokenKind) (bool, error) {
	switch k {
	case tokTrue:
		return true, nil
	case tokFalse:
		return false, nil
	}
	return false, s.wrongKind(k)
}

func (s *jsonScanner) parseInt(k tokenKind, bits int) (int64, error) {
	if k != tokNumber {
		return 0, s.wrongKind(k)
	}
	// An integer literal of at most 19 digits is exactly mant.
	if s.integer && s.exact && s.exp10 == 0 {
		limit := uint64(1) << (bits - 1) // |min| of the type; max is one less
		switch {
		case !s.neg && s.mant < limit:
			return int64(s.mant), nil
		case s.neg && s.mant <= limit:
			return -int64(s.mant), nil
		}
		return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
	}
	tok := s.token()
	if !s.integer {
		var ok bool
		if tok, ok = integralText(tok); !ok {
			return 0, s.errorf("%s is not an integer, want %s", s.shown(), s.dtype)
		}
	}
	v, err := strconv.ParseInt(tok, 10, bits)
	if err != nil {
		// The grammar is already checked, so the only failure is range.
		return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
	}
	return v, nil
}

func (s *jsonScanner) parseUint(k tokenKind, bits int) (uint64, error) {
	if k != tokNumber {
		return 0, s.wrongKind(k)
	}
	if s.integer && s.exact && s.exp10 == 0 && (!s.neg || s.mant == 0) {
		if bits == 64 || s.mant < uint64(1)<<bits {
			return s.mant, nil
		}
		return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
	}
	tok := s.token()
	if !s.integer || tok[0] == '-' {
		var ok bool
		if tok, ok = integralText(tok); !ok {
			return 0, s.errorf("%s is not an integer, want %s", s.shown(), s.dtype)
		}
		if tok[0] == '-' {
			return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
		}
	}
	v, err := strconv.ParseUint(tok, 10, bits)
	if err != nil {
		return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
	}
	return v, nil
}

// parseFloat parses a number or one of the special strings with the given
// bit size (32 or 64). A finite number beyond the range is an error.
func (s *jsonScanner) parseFloat(k tokenKind, bitSize int) (float64, error) {
	switch k {
	case tokNumber:
		if f, ok := s.fastFloat(bitSize); ok {
			return f, nil
		}
		f, err := strconv.ParseFloat(s.token(), bitSize)
		if err != nil {
			return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
		}
		return f, nil
	case tokString:
		if !s.escaped {
			switch s.token() {
			case jsonNaN:
				return math.NaN(), nil
			case jsonPosInf:
				return math.Inf(1), nil
			case jsonNegInf:
				return math.Inf(-1), nil
			}
		}
	}
	return 0, s.wrongKind(k)
}

// float64pow10 holds the powers of ten that float64 represents exactly.
var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts the current number without strconv when that is exact,
// and reports false otherwise (the caller then uses strconv.ParseFloat).
//
// When mant ≤ 2^53 and |exp10| ≤ 22, mant and 10^|exp10| are exact float64s
// and one multiplication or division rounds correctly (Clinger's fast path),
// so the float64 result is strconv's. For 32 bits that float64 is rounded
// again to float32, which gives the correctly rounded float32 unless the
// float64 landed exactly on a midpoint between two float32s (every such
// midpoint is a float64, so rounding to float64 never crosses one): that
// case, and results outside float32's normal range, go to strconv.
func (s *jsonScanner) fastFloat(bitSize int) (float64, bool) {
	if !s.exact || s.mant > 1<<53 || s.exp10 < -22 || s.exp10 > 22 {
		return 0, false
	}
	f := float64(s.mant)
	if s.exp10 >= 0 {
		f *= float64pow10[s.exp10]
	} else {
		f /= float64pow10[-s.exp10]
	}
	if s.neg {
		f = -f
	}
	if bitSize == 64 {
		return f, true
	}
	if a := math.Abs(f); a != 0 && (a < 0x1p-126 || a > math.MaxFloat32) {
		return 0, false
	}
	if math.Float64bits(f)&(1<<29-1) == 1<<28 {
		return 0, false // a float32 midpoint: the decimal may be on either side
	}
	return float64(float32(f)), true
}

// parseBytes copies a string's contents into the scanner's arena. The arena
// is allocated once, at the first string, with the number of input bytes
// left; decoded strings are never longer than their JSON text, so it never
// grows and the total stays bounded by the input.
func (s *jsonScanner) parseBytes(k tokenKind) ([]byte, error) {
	if k != tokString {
		return nil, s.wrongKind(k)
	}
	if s.arena == nil {
		s.arena = make([]byte, 0, len(s.data)-s.start)
	}
	raw := s.data[s.start:s.end]
	from := len(s.arena)
	if !s.escaped {
		if !utf8.Valid(raw) {
			return nil, s.errorf("string is not valid UTF-8 (send binary BYTES with the binary data extension)")
		}
		s.arena = append(s.arena, raw...)
	} else {
		var err error
		if s.arena, err = appendUnescaped(s.arena, raw); err != nil {
			s.arena = s.arena[:from]
			return nil, s.errorf("%v", err)
		}
	}
	return s.arena[from:len(s.arena):len(s.arena)], nil
}

// appendUnescaped appends the decoded contents of a JSON string (without its
// quotes) to dst.
func appendUnescaped(dst, src []byte) ([]byte, error) {
	for i := 0; i < len(src); {
		// Copy the run up to the next escape.
		j := i
		for j < len(src) && src[j] != '\\' {
			j++
		}
		if !utf8.Valid(src[i:j]) {
			return dst, fmt.Errorf("string is not valid UTF-8 (send binary BYTES with the binary data extension)")
		}
		dst = append(dst, src[i:j]...)
		if j == len(src) {
			break
		}
		// src[j] is a backslash; the scanner guarantees a following byte.
		if j+1 >= len(src) {
			return dst, fmt.Errorf("truncated escape at end of string")
		}
		c := src[j+1]
		i = j + 2
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(src[i:])
			if !ok {
				return dst, fmt.Errorf("invalid \\u escape %s", quoteToken(src[j:min(j+6, len(src))]))
			}
			i += 4
			switch {
			case 0xd800 <= r && r < 0xdc00:
				// A high surrogate must be followed by an escaped low one.
				var lo rune
				if i+1 < len(src) && src[i] == '\\' && src[i+1] == 'u' {
					lo, ok = hex4(src[i+2:])
				} else {
					ok = false
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return dst, fmt.Errorf("unpaired surrogate \\u%04x in string", r)
				}
				i += 6
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			case 0xdc00 <= r && r <= 0xdfff:
				return dst, fmt.Errorf("unpaired surrogate \\u%04x in string", r)
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, fmt.Errorf("invalid escape %s in string", quoteToken(src[j:j+2]))
		}
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// integralText turns a JSON number with a fraction or exponent into plain
// integer text when its value is an integer ("1.5e1" → "15", "-0.0" → "0"),
// exactly, without going through float64. It fails for a fractional value.
// Values too long for 64 bits come back as 21 digits so the caller's
// strconv call reports the overflow.
func integralText(tok string) (string, bool) {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	// Split into integer digits, fraction digits and exponent.
	i := 0
	for i < len(tok) && isDigit(tok[i]) {
		i++
	}
	intPart, rest := tok[:i], tok[i:]
	var frac string
	if len(rest) > 0 && rest[0] == '.' {
		j := 1
		for j < len(rest) && isDigit(rest[j]) {
			j++
		}
		frac, rest = rest[1:j], rest[j:]
	}
	exp := 0
	if len(rest) > 0 { // 'e' or 'E'
		rest = rest[1:]
		expNeg := false
		if rest[0] == '+' || rest[0] == '-' {
			expNeg = rest[0] == '-'
			rest = rest[1:]
		}
		for _, c := range []byte(rest) {
			if exp < 1<<30 { // saturate: anything this large is out of range anyway
				exp = exp*10 + int(c-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	digits := intPart + frac
	exp -= len(frac)
	// Drop leading zeros, then trailing zeros into the exponent.
	k := 0
	for k < len(digits) && digits[k] == '0' {
		k++
	}
	digits = digits[k:]
	if digits == "" {
		return "0", true // -0 too, so that it is a valid unsigned zero
	}
	k = len(digits)
	for k > 0 && digits[k-1] == '0' {
		k--
	}
	exp += len(digits) - k
	digits = digits[:k]
	if exp < 0 {
		return "", false
	}
	if len(digits)+exp > 20 {
		// More than 20 digits cannot fit in 64 bits; let strconv say so.
		digits, exp = "999999999999999999999", 0
	}
	b := make([]byte, 0, 1+len(digits)+exp)
	if neg {
		b = append(b, '-')
	}
	b = append(b, digits...)
	for range exp {
		b = append(b, '0')
	}
	return string(b), true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// describeByte names an unexpected byte for an error message.
func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// quoteToken renders token bytes for a message, shortened if long.
func quoteToken(b []byte) string {
	return shorten(string(b))
}

func shorten(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// AppendJSONData appends t's elements to dst as a flat JSON array. Integers
// are exact; FP32, FP16 and BF16 use the shortest decimal that reads back as
// the same float32 (and so the same 16-bit value), FP64 the shortest for
// float64; NaN and ±Inf are the strings "NaN", "Infinity", "-Infinity".
// BYTES are JSON strings escaped as encoding/json does (without HTML
// escaping): bytes that are not valid UTF-8 become U+FFFD, so arbitrary
// binary BYTES must use the binary data extension instead.
func AppendJSONData(dst []byte, t Tensor) ([]byte, error) {
	if !dataMatches(t.Datatype, t.Data) {
		return dst, fmt.Errorf("tensor %q: %s data held as %T", t.Name, t.Datatype, t.Data)
	}
	if n := t.Len(); n > 0 {
		dst = slices.Grow(dst, 2+n*jsonSizeHint(t.Datatype))
	}
	dst = append(dst, '[')
	switch v := t.Data.(type) {
	case []bool:
		for i, e := range v {
			dst = comma(dst, i)
			dst = strconv.AppendBool(dst, e)
		}
	case []uint8:
		for i, e := range v {
			dst = strconv.AppendUint(comma(dst, i), uint64(e), 10)
		}
	case []uint16:
		for i, e := range v {
			dst = strconv.AppendUint(comma(dst, i), uint64(e), 10)
		}
	case []uint32:
		for i, e := range v {
			dst = strconv.AppendUint(comma(dst, i), uint64(e), 10)
		}
	case []uint64:
		for i, e := range v {
			dst = strconv.AppendUint(comma(dst, i), e, 10)
		}
	case []int8:
		for i, e := range v {
			dst = strconv.AppendInt(comma(dst, i), int64(e), 10)
		}
	case []int16:
		for i, e := range v {
			dst = strconv.AppendInt(comma(dst, i), int64(e), 10)
		}
	case []int32:
		for i, e := range v {
			dst = strconv.AppendInt(comma(dst, i), int64(e), 10)
		}
	case []int64:
		for i, e := range v {
			dst = strconv.AppendInt(comma(dst, i), e, 10)
		}
	case []Float16:
		for i, e := range v {
			dst = appendJSONFloat(comma(dst, i), float64(e.Float32()), 32)
		}
	case []BFloat16:
		for i, e := range v {
			dst = appendJSONFloat(comma(dst, i), float64(e.Float32()), 32)
		}
	case []float32:
		for i, e := range v {
			dst = appendJSONFloat(comma(dst, i), float64(e), 32)
		}
	case []float64:
		for i, e := range v {
			dst = appendJSONFloat(comma(dst, i), e, 64)
		}
	case [][]byte:
		for i, e := range v {
			dst = AppendJSONString(comma(dst, i), bytesAsString(e))
		}
	}
	return append(dst, ']'), nil
}

// jsonSizeHint is a rough per-element size used to grow dst once up front.
func jsonSizeHint(d Datatype) int {
	switch d {
	case Bool, Int64, Uint64:
		return 6
	case FP16, BF16:
		return 8
	case FP32:
		return 12
	case FP64:
		return 20
	}
	return 4
}

func comma(dst []byte, i int) []byte {
	if i > 0 {
		return append(dst, ',')
	}
	return dst
}

func appendJSONFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case f != f:
		return append(dst, `"`+jsonNaN+`"`...)
	case math.IsInf(f, 1):
		return append(dst, `"`+jsonPosInf+`"`...)
	case math.IsInf(f, -1):
		return append(dst, `"`+jsonNegInf+`"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string the way encoding/json does with
// HTML escaping off: short escapes for \b \f \n \r \t, \u00XX for other
// control characters, \u2028 and \u2029 escaped for JavaScript, and invalid
// UTF-8 replaced by U+FFFD. The REST encoders of package oip use it too, so
// every JSON string oipkit writes is escaped the same way.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// bytesAsString views b as a string without copying; the string must not
// outlive b's contents.
func bytesAsString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
