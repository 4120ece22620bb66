package tensor

// The JSON data decoder as it was before the strconv-free number parsing:
// the oracle of FuzzDecodeJSONDataDifferential. Test code only.

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

func refDecodeJSONData(d Datatype, shape []int64, data []byte, maxElements int64) (any, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("unknown datatype %q", d)
	}
	count, err := ElementCount(shape)
	if err != nil {
		return nil, err
	}
	if maxElements > 0 && count > maxElements {
		return nil, fmt.Errorf("shape %v has %d elements, more than the limit of %d", shape, count, maxElements)
	}
	// Every element takes at least one byte plus a separator, so the input
	// cannot hold more than len(data)/2+1 of them whatever the shape claims.
	capacity := min(count, int64(len(data)/2+1))
	if maxElements > 0 {
		capacity = min(capacity, maxElements)
	}
	s := &refJsonScanner{data: data, dtype: d, shape: shape, count: count}
	c := int(capacity)
	var out any
	switch d {
	case Bool:
		out, err = refDecodeElements(s, c, s.parseBool)
	case Uint8:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (uint8, error) {
			v, err := s.parseUint(k, 8)
			return uint8(v), err
		})
	case Uint16:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (uint16, error) {
			v, err := s.parseUint(k, 16)
			return uint16(v), err
		})
	case Uint32:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (uint32, error) {
			v, err := s.parseUint(k, 32)
			return uint32(v), err
		})
	case Uint64:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (uint64, error) {
			return s.parseUint(k, 64)
		})
	case Int8:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (int8, error) {
			v, err := s.parseInt(k, 8)
			return int8(v), err
		})
	case Int16:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (int16, error) {
			v, err := s.parseInt(k, 16)
			return int16(v), err
		})
	case Int32:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (int32, error) {
			v, err := s.parseInt(k, 32)
			return int32(v), err
		})
	case Int64:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (int64, error) {
			return s.parseInt(k, 64)
		})
	case FP16:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (Float16, error) {
			f, err := s.parseFloat(k, 32)
			h := Float16FromFloat32(float32(f))
			if err == nil && h&0x7fff == 0x7c00 && !math.IsInf(f, 0) {
				err = s.errorf("%s overflows FP16", s.shown())
			}
			return h, err
		})
	case BF16:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (BFloat16, error) {
			f, err := s.parseFloat(k, 32)
			h := BFloat16FromFloat32(float32(f))
			if err == nil && h&0x7fff == 0x7f80 && !math.IsInf(f, 0) {
				err = s.errorf("%s overflows BF16", s.shown())
			}
			return h, err
		})
	case FP32:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (float32, error) {
			f, err := s.parseFloat(k, 32)
			return float32(f), err
		})
	case FP64:
		out, err = refDecodeElements(s, c, func(k refTokenKind) (float64, error) {
			return s.parseFloat(k, 64)
		})
	case Bytes:
		out, err = refDecodeElements(s, c, s.parseBytes)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// refDecodeElements runs the scanner over the whole value, converting each
// scalar with parse. capacity is already bounded, so append never grows.
func refDecodeElements[T any](s *refJsonScanner, capacity int, parse func(refTokenKind) (T, error)) ([]T, error) {
	v := make([]T, 0, capacity)
	for {
		k, err := s.next()
		if err != nil {
			return nil, err
		}
		if k == refTokEnd {
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
	for s.pos < len(s.data) && refIsSpace(s.data[s.pos]) {
		s.pos++
	}
	if s.pos < len(s.data) {
		return nil, fmt.Errorf("offset %d: unexpected %s after the data array", s.pos, refDescribeByte(s.data[s.pos]))
	}
	if int64(len(v)) != s.count {
		return nil, fmt.Errorf("data has %d elements, shape %v needs %d", len(v), s.shape, s.count)
	}
	return v, nil
}

type refTokenKind uint8

const (
	refTokEnd    refTokenKind = iota // the outermost array closed
	refTokNumber                     // s.start:s.end is the number
	refTokString                     // s.start:s.end is the contents between the quotes
	refTokTrue
	refTokFalse
	refTokNull
)

// Scanner states: what may come next.
const (
	refStBegin = iota // the opening '[' of the whole value
	refStOpen         // just after '[': an element, '[' or ']'
	refStComma        // just after ',': an element or '['
	refStAfter        // after an element or ']': ',' or ']'
	refStDone         // the outermost array closed
)

// refJsonScanner walks nested JSON arrays and stops at each scalar. Nesting is
// tracked by a counter, not by recursion, so depth costs no stack.
type refJsonScanner struct {
	data  []byte
	pos   int
	depth int
	state int

	// The current scalar token.
	start, end int
	integer    bool // a number without fraction or exponent
	escaped    bool // a string containing backslash escapes

	dtype Datatype
	shape []int64
	count int64
	index int // index of the element being parsed, for messages

	arena []byte // backing store for decoded BYTES elements
}

// next advances to the next scalar element and returns its kind, or refTokEnd
// once the outermost array has closed.
func (s *refJsonScanner) next() (refTokenKind, error) {
	d := s.data
	for {
		for s.pos < len(d) && refIsSpace(d[s.pos]) {
			s.pos++
		}
		if s.state == refStDone {
			return refTokEnd, nil
		}
		if s.pos >= len(d) {
			if s.state == refStBegin {
				return 0, fmt.Errorf("data is empty, want a JSON array")
			}
			return 0, fmt.Errorf("offset %d: unexpected end of data inside an array", s.pos)
		}
		c := d[s.pos]
		switch s.state {
		case refStBegin:
			if c != '[' {
				return 0, fmt.Errorf("data must be a JSON array, found %s", refDescribeByte(c))
			}
			if err := s.open(); err != nil {
				return 0, err
			}
		case refStAfter:
			switch c {
			case ',':
				s.pos++
				s.state = refStComma
			case ']':
				if s.close() {
					return refTokEnd, nil
				}
			default:
				return 0, fmt.Errorf("offset %d: expected ',' or ']', found %s", s.pos, refDescribeByte(c))
			}
		default: // refStOpen, refStComma
			switch c {
			case '[':
				if err := s.open(); err != nil {
					return 0, err
				}
				continue
			case ']':
				if s.state == refStComma {
					return 0, fmt.Errorf("offset %d: ']' after ','", s.pos)
				}
				if s.close() {
					return refTokEnd, nil
				}
				continue
			}
			k, err := s.scalar(c)
			if err != nil {
				return 0, err
			}
			s.state = refStAfter
			return k, nil
		}
	}
}

func (s *refJsonScanner) open() error {
	s.depth++
	if s.depth > MaxJSONDepth {
		return fmt.Errorf("offset %d: arrays nested deeper than %d", s.pos, MaxJSONDepth)
	}
	s.pos++
	s.state = refStOpen
	return nil
}

// close consumes a ']' and reports whether it closed the outermost array.
func (s *refJsonScanner) close() bool {
	s.pos++
	s.depth--
	if s.depth == 0 {
		s.state = refStDone
		return true
	}
	s.state = refStAfter
	return false
}

// scalar scans the token starting with c at s.pos.
func (s *refJsonScanner) scalar(c byte) (refTokenKind, error) {
	switch {
	case c == '"':
		return refTokString, s.scanString()
	case c == '-' || '0' <= c && c <= '9':
		return refTokNumber, s.scanNumber()
	case c == 't':
		return refTokTrue, s.literal("true")
	case c == 'f':
		return refTokFalse, s.literal("false")
	case c == 'n':
		return refTokNull, s.literal("null")
	case c == '{':
		return 0, s.errorf("found an object, want %s for %s", s.want(), s.dtype)
	}
	return 0, fmt.Errorf("offset %d: element %d: unexpected %s", s.pos, s.index, refDescribeByte(c))
}

func (s *refJsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return fmt.Errorf("offset %d: element %d: invalid literal, want %s", s.pos, s.index, word)
	}
	s.start, s.end = s.pos, s.pos+len(word)
	s.pos += len(word)
	return nil
}

// scanNumber scans a number with the exact JSON grammar, so strconv never
// sees forms it accepts but JSON does not (hex, underscores, "inf", "+1").
func (s *refJsonScanner) scanNumber() error {
	d := s.data
	i := s.pos
	start := i
	bad := func() error {
		end := min(i+1, len(d))
		return fmt.Errorf("offset %d: element %d: invalid number %s", start, s.index, refQuoteToken(d[start:end]))
	}
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return bad()
	case d[i] == '0':
		i++
	case '1' <= d[i] && d[i] <= '9':
		i++
		for i < len(d) && refIsDigit(d[i]) {
			i++
		}
	default:
		return bad()
	}
	integer := true
	if i < len(d) && d[i] == '.' {
		integer = false
		i++
		if i >= len(d) || !refIsDigit(d[i]) {
			return bad()
		}
		for i < len(d) && refIsDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !refIsDigit(d[i]) {
			return bad()
		}
		for i < len(d) && refIsDigit(d[i]) {
			i++
		}
	}
	s.start, s.end, s.integer = start, i, integer
	s.pos = i
	return nil
}

// scanString finds the end of a string; escapes and UTF-8 are checked when
// the contents are decoded.
func (s *refJsonScanner) scanString() error {
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
func (s *refJsonScanner) token() string {
	if s.end == s.start {
		return ""
	}
	return unsafe.String(&s.data[s.start], s.end-s.start)
}

// shown is the current token for an error message, quoted if a string and
// shortened if long.
func (s *refJsonScanner) shown() string {
	return refQuoteToken(s.data[s.start:s.end])
}

func (s *refJsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("element %d: "+format, append([]any{s.index}, args...)...)
}

// want names what the datatype accepts, for messages.
func (s *refJsonScanner) want() string {
	switch s.dtype {
	case Bool:
		return "true or false"
	case Bytes:
		return "a string"
	}
	return "a number"
}

// wrongKind reports a token of the wrong kind for the datatype.
func (s *refJsonScanner) wrongKind(k refTokenKind) error {
	var found string
	switch k {
	case refTokNumber:
		found = "number " + s.shown()
	case refTokString:
		found = "string " + strconv.Quote(refShorten(string(s.data[s.start:s.end])))
	case refTokTrue:
		found = "true"
	case refTokFalse:
		found = "false"
	case refTokNull:
		found = "null"
	}
	return s.errorf("found %s, want %s for %s", found, s.want(), s.dtype)
}

func (s *refJsonScanner) parseBool(k refTokenKind) (bool, error) {
	switch k {
	case refTokTrue:
		return true, nil
	case refTokFalse:
		return false, nil
	}
	return false, s.wrongKind(k)
}

func (s *refJsonScanner) parseInt(k refTokenKind, bits int) (int64, error) {
	if k != refTokNumber {
		return 0, s.wrongKind(k)
	}
	tok := s.token()
	if !s.integer {
		var ok bool
		if tok, ok = refIntegralText(tok); !ok {
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

func (s *refJsonScanner) parseUint(k refTokenKind, bits int) (uint64, error) {
	if k != refTokNumber {
		return 0, s.wrongKind(k)
	}
	tok := s.token()
	if !s.integer || tok[0] == '-' {
		var ok bool
		if tok, ok = refIntegralText(tok); !ok {
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
func (s *refJsonScanner) parseFloat(k refTokenKind, bitSize int) (float64, error) {
	switch k {
	case refTokNumber:
		f, err := strconv.ParseFloat(s.token(), bitSize)
		if err != nil {
			return 0, s.errorf("%s overflows %s", s.shown(), s.dtype)
		}
		return f, nil
	case refTokString:
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

// parseBytes copies a string's contents into the scanner's arena. The arena
// is allocated once, at the first string, with the number of input bytes
// left; decoded strings are never longer than their JSON text, so it never
// grows and the total stays bounded by the input.
func (s *refJsonScanner) parseBytes(k refTokenKind) ([]byte, error) {
	if k != refTokString {
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
		if s.arena, err = refAppendUnescaped(s.arena, raw); err != nil {
			s.arena = s.arena[:from]
			return nil, s.errorf("%v", err)
		}
	}
	return s.arena[from:len(s.arena):len(s.arena)], nil
}

// refAppendUnescaped appends the decoded contents of a JSON string (without its
// quotes) to dst.
func refAppendUnescaped(dst, src []byte) ([]byte, error) {
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
			r, ok := refHex4(src[i:])
			if !ok {
				return dst, fmt.Errorf("invalid \\u escape %s", refQuoteToken(src[j:min(j+6, len(src))]))
			}
			i += 4
			switch {
			case 0xd800 <= r && r < 0xdc00:
				// A high surrogate must be followed by an escaped low one.
				var lo rune
				if i+1 < len(src) && src[i] == '\\' && src[i+1] == 'u' {
					lo, ok = refHex4(src[i+2:])
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
			return dst, fmt.Errorf("invalid escape %s in string", refQuoteToken(src[j:j+2]))
		}
	}
	return dst, nil
}

func refHex4(b []byte) (rune, bool) {
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

// refIntegralText turns a JSON number with a fraction or exponent into plain
// integer text when its value is an integer ("1.5e1" → "15", "-0.0" → "0"),
// exactly, without going through float64. It fails for a fractional value.
// Values too long for 64 bits come back as 21 digits so the caller's
// strconv call reports the overflow.
func refIntegralText(tok string) (string, bool) {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	// Split into integer digits, fraction digits and exponent.
	i := 0
	for i < len(tok) && refIsDigit(tok[i]) {
		i++
	}
	intPart, rest := tok[:i], tok[i:]
	var frac string
	if len(rest) > 0 && rest[0] == '.' {
		j := 1
		for j < len(rest) && refIsDigit(rest[j]) {
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

func refIsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func refIsDigit(c byte) bool { return '0' <= c && c <= '9' }

// refDescribeByte names an unexpected byte for an error message.
func refDescribeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// refQuoteToken renders token bytes for a message, shortened if long.
func refQuoteToken(b []byte) string {
	return refShorten(string(b))
}

func refShorten(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
