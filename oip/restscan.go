package oip

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/oipkit/oipkit/tensor"
)

// A one-pass scanner for the JSON part of REST inference messages: the fast
// path of DecodeRESTRequest and DecodeRESTResponse.
//
// It fills the same restRequestJSON / restResponseJSON that encoding/json
// would, with the raw members aliasing the body, and converts a tensor's
// "data" array in the pass that finds its end when "datatype" and "shape"
// came before it (as every known client writes them). It takes only input it
// is sure about: a well-formed object whose member names are spelt exactly,
// once each, with inputs and outputs arrays of objects. For anything else
// (malformed JSON, escaped or differently-cased member names, duplicates,
// null where an array or object is expected, nesting deeper than
// maxScanDepth) it gives up, and the caller decodes with encoding/json, as
// before, so every error and every lenient case stays exactly as it was.
// FuzzDecodeRESTRequestDifferential checks that the two paths agree.

// maxScanDepth bounds the nesting the scanner follows before it gives up.
const maxScanDepth = 512

type jsonScan struct {
	b     []byte
	i     int
	depth int
	// maxElements bounds the eager decode of data arrays (0: none).
	maxElements int64
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, reporting whether c was there.
func (s *jsonScan) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *jsonScan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str scans a string at s.i (its opening quote) with the JSON grammar and
// returns its contents without the quotes, and whether it had escapes.
func (s *jsonScan) str() (contents []byte, escaped, ok bool) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	for i := start; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return nil, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, false, false
				}
				i += 6
			default:
				return nil, false, false
			}
		default:
			i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number scans a number at s.i with the JSON grammar.
func (s *jsonScan) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return true
}

func (s *jsonScan) literal(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// value scans any JSON value after optional whitespace and returns its
// bytes.
func (s *jsonScan) value() (json.RawMessage, bool) {
	s.ws()
	start := s.i
	if !s.skip() {
		return nil, false
	}
	return s.b[start:s.i], true
}

// skip scans one value at s.i with the JSON grammar.
func (s *jsonScan) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '-' || isDigit(c):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '[':
		return s.array(func() bool { s.ws(); return s.skip() })
	case c == '{':
		return s.object(func([]byte) bool { s.ws(); return s.skip() })
	}
	return false
}

// array scans an array at s.i, calling elem at each element's position
// (before its whitespace); elem must scan the element.
func (s *jsonScan) array(elem func() bool) bool {
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	s.i++ // '['
	if s.consume(']') {
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(',') {
			continue
		}
		if s.consume(']') {
			s.depth--
			return true
		}
		return false
	}
}

// object scans an object at s.i, calling member with each member's name
// (contents, unescaped only: an escaped name ends the scan) positioned before
// the value's whitespace; member must scan the value.
func (s *jsonScan) object(member func(name []byte) bool) bool {
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	s.i++ // '{'
	if s.consume('}') {
		s.depth--
		return true
	}
	for {
		s.ws()
		name, escaped, ok := s.str()
		if !ok || escaped || !s.consume(':') || !member(name) {
			return false
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			s.depth--
			return true
		}
		return false
	}
}

// members matches member names against the fields of one object: exactly,
// once each. A name that differs from a field only in case (which
// encoding/json would match too) or a repeated field ends the scan.
type members struct {
	names []string
	seen  uint32
}

// field returns the index of name among the fields, -1 for an unknown member
// (to be skipped), or -2 when the scan must give up.
func (m *members) field(name []byte) int {
	for i, n := range m.names {
		if string(name) == n {
			if m.seen&(1<<i) != 0 {
				return -2
			}
			m.seen |= 1 << i
			return i
		}
	}
	for _, n := range m.names {
		if bytes.EqualFold(name, []byte(n)) {
			return -2
		}
	}
	return -1
}

var (
	requestFields  = []string{"id", "parameters", "inputs", "outputs"}
	responseFields = []string{"model_name", "model_version", "id", "parameters", "outputs"}
	tensorFields   = []string{"name", "shape", "datatype", "parameters", "data"}
	outputFields   = []string{"name", "parameters"}
)

// scanRequest is the fast path for unmarshalHeader(header, j), but for
// j.Inputs: the inputs are appended to buf and returned, so that a caller
// can keep them on its stack (a store through j would move them to the
// heap).
func scanRequest(header []byte, j *restRequestJSON, buf []restTensorJSON, maxElements int64) (inputs []restTensorJSON, ok bool) {
	s := &jsonScan{b: header, maxElements: maxElements}
	if s.peek() != '{' {
		return nil, false
	}
	m := members{names: requestFields}
	ok = s.object(func(name []byte) bool {
		var ok bool
		switch m.field(name) {
		case 0:
			j.ID, ok = s.value()
		case 1:
			j.Parameters, ok = s.value()
		case 2:
			inputs, ok = s.tensors(buf)
			return ok && inputs != nil
		case 3:
			ok = s.peek() == '[' && s.array(func() bool {
				o, ok := s.outputRef()
				j.Outputs = append(j.Outputs, o)
				return ok
			})
			if ok && j.Outputs == nil {
				j.Outputs = []restOutputRefJSON{}
			}
		case -1:
			_, ok = s.value()
		}
		return ok
	})
	return inputs, ok && s.end()
}

// scanResponse is the fast path for unmarshalHeader(header, j).
func scanResponse(header []byte, j *restResponseJSON) bool {
	s := &jsonScan{b: header}
	if s.peek() != '{' {
		return false
	}
	m := members{names: responseFields}
	ok := s.object(func(name []byte) bool {
		var ok bool
		switch m.field(name) {
		case 0:
			j.ModelName, ok = s.value()
		case 1:
			j.ModelVersion, ok = s.value()
		case 2:
			j.ID, ok = s.value()
		case 3:
			j.Parameters, ok = s.value()
		case 4:
			j.Outputs, ok = s.tensors(nil)
			return ok && j.Outputs != nil
		case -1:
			_, ok = s.value()
		}
		return ok
	})
	return ok && s.end()
}

// end reports whether only whitespace is left.
func (s *jsonScan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// tensors scans an array of tensor objects, appending them to buf (nil: a
// new slice); an empty array gives an empty, non-nil slice as encoding/json
// does.
func (s *jsonScan) tensors(buf []restTensorJSON) ([]restTensorJSON, bool) {
	if s.peek() != '[' {
		return nil, false
	}
	ts := buf
	if ts == nil {
		ts = make([]restTensorJSON, 0, 2)
	}
	ok := s.array(func() bool {
		ts = append(ts, restTensorJSON{})
		return s.tensor(&ts[len(ts)-1])
	})
	return ts, ok
}

// tensor scans one input or output object.
func (s *jsonScan) tensor(t *restTensorJSON) bool {
	if s.peek() != '{' {
		return false
	}
	m := members{names: tensorFields}
	return s.object(func(name []byte) bool {
		var ok bool
		switch m.field(name) {
		case 0:
			t.Name, ok = s.value()
		case 1:
			t.Shape, ok = s.value()
		case 2:
			t.Datatype, ok = s.value()
		case 3:
			t.Parameters, ok = s.value()
		case 4:
			return s.data(t)
		case -1:
			_, ok = s.value()
		}
		return ok
	})
}

// data scans a tensor's "data" value. When the datatype and shape are known
// and the value is an array, it is decoded here with
// tensor.DecodeJSONDataPrefix; decodeTensorData uses the result when the
// tensor passes every check, exactly where it would have decoded t.Data.
// On a decode error the value is scanned as plain JSON, and
// decodeTensorData decodes it again to report the error as it always did.
func (s *jsonScan) data(t *restTensorJSON) bool {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '[' && t.Datatype != nil && t.Shape != nil {
		if d, shape, ok := fastDatatypeShape(t.Datatype, t.Shape); ok && d != tensor.Bytes {
			v, n, err := tensor.DecodeJSONDataPrefix(d, shape, s.b[start:], s.maxElements)
			if err == nil {
				s.i = start + n
				t.Data = s.b[start:s.i]
				t.decoded = v
				t.decodedAs = decodedAs{d, shape}
				return true
			}
		}
	}
	var ok bool
	t.Data, ok = s.value()
	return ok
}

// outputRef scans one requested output object.
func (s *jsonScan) outputRef() (restOutputRefJSON, bool) {
	var o restOutputRefJSON
	if s.peek() != '{' {
		return o, false
	}
	m := members{names: outputFields}
	ok := s.object(func(name []byte) bool {
		var ok bool
		switch m.field(name) {
		case 0:
			o.Name, ok = s.value()
		case 1:
			o.Parameters, ok = s.value()
		case -1:
			_, ok = s.value()
		}
		return ok
	})
	return o, ok
}

// decodedAs records the datatype and shape a data array was decoded for.
type decodedAs struct {
	datatype tensor.Datatype
	shape    []int64
}

// fastDatatypeShape parses a tensor's datatype and shape members as
// parseRESTTensor does, when both are in their plain forms.
func fastDatatypeShape(dt, shape json.RawMessage) (tensor.Datatype, []int64, bool) {
	d, ok := knownDatatype(dt)
	if !ok {
		return "", nil, false
	}
	dims, ok := fastShape(shape)
	if !ok {
		return "", nil, false
	}
	if _, err := tensor.ElementCount(dims); err != nil {
		return "", nil, false
	}
	return d, dims, true
}

// fastString decodes a JSON string without escapes whose contents are valid
// UTF-8: exactly what encoding/json gives for it. ok is false for any other
// value; parseString then decides.
func fastString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	c := raw[1 : len(raw)-1]
	if bytes.IndexByte(c, '\\') >= 0 || !utf8.Valid(c) {
		return "", false
	}
	return string(c), true
}

// fastShape decodes a JSON array of non-negative integers of at most 18
// digits (so they fit int64), the plain form of parseShape's input.
func fastShape(raw json.RawMessage) ([]int64, bool) {
	s := jsonScan{b: raw}
	if s.peek() != '[' {
		return nil, false
	}
	n := 0
	for _, c := range raw {
		if c == ',' {
			n++
		}
	}
	shape := make([]int64, 0, n+1)
	ok := s.array(func() bool {
		s.ws()
		start := s.i
		var v int64
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			v = v*10 + int64(s.b[s.i]-'0')
			s.i++
		}
		digits := s.i - start
		if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
			return false
		}
		shape = append(shape, v)
		return true
	})
	if !ok || !s.end() {
		return nil, false
	}
	return shape, true
}

// fastParameters parses a parameters object in its plain form — distinct
// unescaped names, values that are booleans, unescaped valid UTF-8 strings
// or numbers — into what parseParameters gives for it. ok is false for
// anything else; parseParameters then decodes with encoding/json. The
// member named drop (none when "") is not put in p but returned as dropped
// (nil when absent), so that taking it out allocates no map.
func fastParameters(raw json.RawMessage, drop string) (p Parameters, dropped any, ok bool) {
	s := jsonScan{b: raw}
	if s.peek() != '{' {
		return nil, nil, false
	}
	ok = s.object(func(name []byte) bool {
		if !utf8.Valid(name) {
			return false
		}
		isDrop := drop != "" && string(name) == drop
		if _, dup := p[string(name)]; dup || (isDrop && dropped != nil) {
			return false
		}
		var v any
		switch s.peek() {
		case 't':
			v = true
			if !s.literal("true") {
				return false
			}
		case 'f':
			v = false
			if !s.literal("false") {
				return false
			}
		case '"':
			c, escaped, ok := s.str()
			if !ok || escaped || !utf8.Valid(c) {
				return false
			}
			v = string(c)
		default:
			start := s.i
			if !s.number() {
				return false
			}
			v = numberValue(json.Number(s.b[start:s.i]))
		}
		if isDrop {
			dropped = v
			return true
		}
		if p == nil {
			p = make(Parameters, 2)
		}
		p[paramName(name)] = v
		return true
	})
	if !ok || !s.end() {
		return nil, nil, false
	}
	return p, dropped, true
}

// paramName is string(name), without allocating for the binary-data
// extension's parameters, which are on every binary request.
func paramName(name []byte) string {
	for _, n := range [...]string{ParamBinaryDataSize, ParamBinaryDataOutput, ParamBinaryData} {
		if string(name) == n {
			return n
		}
	}
	return string(name)
}

// knownDatatype returns the datatype a JSON string names when it is one of
// tensor.Datatypes spelt plainly, without allocating.
func knownDatatype(raw json.RawMessage) (tensor.Datatype, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, d := range tensor.Datatypes {
		if string(raw[1:len(raw)-1]) == string(d) {
			return d, true
		}
	}
	return "", false
}
