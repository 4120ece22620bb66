package oip

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/tensor"
)

// JSON building blocks shared by the REST encoders and decoders. Encoding is
// append-style by hand (no reflection on the hot path); decoding uses
// encoding/json with json.RawMessage leaves that are then checked one by one,
// so every type error can be reported with its context.

// invalidf returns an error wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// tooLargef returns an error wrapping ErrTooLarge.
func tooLargef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTooLarge}, args...)...)
}

// ---- encoding ----

// appendKey appends "key": to an object that was opened at index start,
// preceded by a comma unless it is the object's first member.
func appendKey(dst []byte, start int, key string) []byte {
	if len(dst) > start+1 {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendShape appends a shape as a JSON array of integers.
func appendShape(dst []byte, shape []int64) []byte {
	dst = append(dst, '[')
	for i, d := range shape {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, d, 10)
	}
	return append(dst, ']')
}

// paramField is a parameter the encoder adds or overrides (binary_data_size,
// binary_data_output) without touching the caller's map.
type paramField struct {
	key   string
	value any
}

// appendParametersField appends "parameters":{...} to the object opened at
// start, holding p without the key drop and with extra (if its key is not
// empty) overriding p. Keys are sorted so the output is deterministic. Nothing
// is written when the object would be empty.
func appendParametersField(dst []byte, start int, p Parameters, drop string, extra paramField) ([]byte, error) {
	if len(p) == 0 && extra.key == "" {
		return dst, nil
	}
	keys := make([]string, 0, len(p)+1)
	for k := range p {
		if (drop != "" && k == drop) || (extra.key != "" && k == extra.key) {
			continue
		}
		keys = append(keys, k)
	}
	if extra.key != "" {
		keys = append(keys, extra.key)
	}
	if len(keys) == 0 {
		return dst, nil
	}
	slices.Sort(keys)
	dst = appendKey(dst, start, "parameters")
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = tensor.AppendJSONString(dst, k)
		dst = append(dst, ':')
		v := p[k]
		if extra.key != "" && k == extra.key {
			v = extra.value
		}
		var err error
		if dst, err = appendParamValue(dst, v); err != nil {
			return dst, fmt.Errorf("parameter %q: %w", k, err)
		}
	}
	return append(dst, '}'), nil
}

// appendParamValue appends one parameter value. Floats are always written
// with a fraction or exponent so that they decode as floats again.
func appendParamValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float64:
		return appendJSONFloat(dst, v)
	case float32:
		return appendJSONFloat(dst, float64(v))
	case string:
		return tensor.AppendJSONString(dst, v), nil
	}
	return dst, fmt.Errorf("unsupported value type %T (want bool, int64, uint64, float64 or string)", v)
}

// appendJSONFloat writes f like encoding/json does (ES6 number formatting),
// then adds ".0" to integral values so the text stays a float.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%v is not representable in JSON", f)
	}
	start := len(dst)
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(dst)
		if n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst, nil
	}
	if bytes.IndexByte(dst[start:], '.') < 0 {
		dst = append(dst, '.', '0')
	}
	return dst, nil
}

// jsonDataSizeHint estimates the JSON text size of t's data so that encoders
// rarely grow their buffer.
func jsonDataSizeHint(t tensor.Tensor) int {
	n := max(t.Len(), 0)
	switch t.Datatype {
	case tensor.Bool:
		return 6 * n
	case tensor.Uint8, tensor.Int8:
		return 5 * n
	case tensor.Uint16, tensor.Int16, tensor.FP16, tensor.BF16:
		return 8 * n
	case tensor.Uint32, tensor.Int32:
		return 12 * n
	case tensor.FP32:
		return 16 * n
	case tensor.Bytes:
		return tensor.RawSize(t) + 2*n
	}
	return 22 * n
}

// ---- decoding ----

// restTensorJSON is a request input or response output as sent. Every field
// is kept raw and checked by parseRESTTensor. encoding/json matches keys
// case-insensitively; that leniency is accepted.
type restTensorJSON struct {
	Name       json.RawMessage `json:"name"`
	Shape      json.RawMessage `json:"shape"`
	Datatype   json.RawMessage `json:"datatype"`
	Parameters json.RawMessage `json:"parameters"`
	Data       json.RawMessage `json:"data"`

	// decoded is Data already converted by the one-pass scanner
	// (restscan.go) for decodedAs; nil when it was not.
	decoded   any
	decodedAs decodedAs
}

type restOutputRefJSON struct {
	Name       json.RawMessage `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

type restRequestJSON struct {
	ID         json.RawMessage     `json:"id"`
	Parameters json.RawMessage     `json:"parameters"`
	Inputs     []restTensorJSON    `json:"inputs"`
	Outputs    []restOutputRefJSON `json:"outputs"`
}

type restResponseJSON struct {
	ModelName    json.RawMessage  `json:"model_name"`
	ModelVersion json.RawMessage  `json:"model_version"`
	ID           json.RawMessage  `json:"id"`
	Parameters   json.RawMessage  `json:"parameters"`
	Outputs      []restTensorJSON `json:"outputs"`
}

// unmarshalHeader parses the JSON part of a body into v, translating
// encoding/json errors into ErrInvalid with readable messages.
func unmarshalHeader(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return invalidf("empty JSON body")
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalidf("malformed JSON at byte %d: %v", se.Offset, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return invalidf("the body must be a JSON object, got %s", te.Value)
		}
		return invalidf("%s must be an array of objects, got %s", te.Field, te.Value)
	}
	return invalidf("malformed JSON: %v", err)
}

// absent reports a member that was not sent or was null; null is treated as
// absent everywhere.
func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// firstByte is the first non-space byte of a JSON value, which tells its kind.
func firstByte(raw json.RawMessage) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// jsonKind names the kind of a JSON value for error messages.
func jsonKind(raw json.RawMessage) string {
	switch c := firstByte(raw); {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || ('0' <= c && c <= '9'):
		return "a number " + string(bytes.TrimSpace(raw))
	}
	return "nothing"
}

// The parse helpers below return plain errors; callers add context and wrap
// ErrInvalid once.

// parseString decodes a JSON string value.
func parseString(raw json.RawMessage, what string) (string, error) {
	if s, ok := fastString(raw); ok {
		return s, nil
	}
	if firstByte(raw) != '"' {
		return "", fmt.Errorf("%s must be a string, got %s", what, jsonKind(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %v", what, err)
	}
	return s, nil
}

// parseShape decodes a JSON array of non-negative integers. Only integer
// syntax is accepted: 1.0, 1e0, "1", -1 and null are errors.
func parseShape(raw json.RawMessage) ([]int64, error) {
	if shape, ok := fastShape(raw); ok {
		return shape, nil
	}
	if firstByte(raw) != '[' {
		return nil, fmt.Errorf("shape must be an array of integers, got %s", jsonKind(raw))
	}
	var dims []json.RawMessage
	if err := json.Unmarshal(raw, &dims); err != nil {
		return nil, fmt.Errorf("shape: %v", err)
	}
	shape := make([]int64, len(dims))
	for i, d := range dims {
		d = bytes.TrimSpace(d)
		for _, c := range d {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("shape dimension %d must be a non-negative integer, got %s", i, d)
			}
		}
		v, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil || len(d) == 0 {
			return nil, fmt.Errorf("shape dimension %d (%s) does not fit in int64", i, d)
		}
		shape[i] = v
	}
	return shape, nil
}

// parseParameters decodes a JSON parameters object. Numbers become int64
// when integral and in range, uint64 when integral and above MaxInt64, and
// float64 otherwise; numbers beyond float64 stay json.Number. Other values
// (strings, bools, null, objects, arrays) are kept as decoded. An empty
// object gives nil.
func parseParameters(raw json.RawMessage, what string) (Parameters, error) {
	if absent(raw) {
		return nil, nil
	}
	if p, _, ok := fastParameters(raw, ""); ok {
		return p, nil
	}
	if firstByte(raw) != '{' {
		return nil, fmt.Errorf("%s must be an object, got %s", what, jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	for k, v := range m {
		m[k] = convertNumbers(v)
	}
	return Parameters(m), nil
}

// tensorParameters is parseParameters for a tensor's parameters with
// binary_data_size, framing rather than a parameter, taken out: size is its
// value when has is true. Parameters left empty are nil.
func tensorParameters(raw json.RawMessage) (p Parameters, size any, has bool, err error) {
	if absent(raw) {
		return nil, nil, false, nil
	}
	if p, size, ok := fastParameters(raw, ParamBinaryDataSize); ok {
		return p, size, size != nil, nil // fast-path values are never nil
	}
	if p, err = parseParameters(raw, "parameters"); err != nil {
		return nil, nil, false, err
	}
	if size, has = p[ParamBinaryDataSize]; has {
		delete(p, ParamBinaryDataSize)
		if len(p) == 0 {
			p = nil
		}
	}
	return p, size, has, nil
}

// convertNumbers replaces json.Number values, also inside arrays and
// objects, by int64, uint64 or float64.
func convertNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return numberValue(v)
	case []any:
		for i, e := range v {
			v[i] = convertNumbers(e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = convertNumbers(e)
		}
	}
	return v
}

func numberValue(n json.Number) any {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return n // beyond float64: keep the text rather than lose it
}

// restTensor is a parsed input or output header: everything but the data.
type restTensor struct {
	name       string
	datatype   tensor.Datatype
	shape      []int64
	count      int64
	params     Parameters
	binarySize int64           // -1 when the data is in JSON
	shm        bool            // the data is in a shared-memory region, not the message
	data       json.RawMessage // the JSON data, or the binary slice of the tail (splitBinary)
	decoded    any             // data converted by the scanner, for decodedAs
	decodedAs  decodedAs
}

// parseRESTTensor checks one input or output object into t. kind is
// "input" or "output"; i is its index, used in messages until the name is
// known.
func parseRESTTensor(j *restTensorJSON, kind string, i int, t *restTensor) error {
	if absent(j.Name) {
		return invalidf("%s %d: missing name", kind, i)
	}
	name, err := parseString(j.Name, "name")
	if err != nil {
		return invalidf("%s %d: %w", kind, i, err)
	}
	if name == "" {
		return invalidf("%s %d: name is empty", kind, i)
	}
	t.name = name
	if absent(j.Shape) {
		return invalidf("%s %q: missing shape", kind, name)
	}
	if j.decodedAs.shape != nil {
		t.shape = j.decodedAs.shape // parsed from j.Shape by the scanner
	} else if t.shape, err = parseShape(j.Shape); err != nil {
		return invalidf("%s %q: %w", kind, name, err)
	}
	if absent(j.Datatype) {
		return invalidf("%s %q: missing datatype", kind, name)
	}
	if d, ok := knownDatatype(j.Datatype); ok {
		t.datatype = d
	} else {
		dt, err := parseString(j.Datatype, "datatype")
		if err != nil {
			return invalidf("%s %q: %w", kind, name, err)
		}
		if t.datatype, err = tensor.ParseDatatype(dt); err != nil {
			return invalidf("%s %q: %v", kind, name, err)
		}
	}
	if t.count, err = tensor.ElementCount(t.shape); err != nil {
		return invalidf("%s %q: %v", kind, name, err)
	}
	var size any
	var hasSize bool
	if t.params, size, hasSize, err = tensorParameters(j.Parameters); err != nil {
		return invalidf("%s %q: %w", kind, name, err)
	}
	t.binarySize = -1
	if hasSize {
		n, isInt := size.(int64)
		if !isInt || n < 0 {
			return invalidf("%s %q: %s must be a non-negative integer, got %v", kind, name, ParamBinaryDataSize, size)
		}
		t.binarySize = n
	}
	hasData := !absent(j.Data)
	if InSharedMemory(t.params) {
		switch {
		case kind == "input" && (hasData || t.binarySize >= 0):
			return invalidf("%s %q: both data and %s are set; a tensor in shared memory carries no data", kind, name, ParamSharedMemoryRegion)
		case !hasData && t.binarySize < 0:
			t.shm = true
			return nil
		}
	}
	switch {
	case hasData && t.binarySize >= 0:
		return invalidf("%s %q: both data and %s are set; set exactly one", kind, name, ParamBinaryDataSize)
	case !hasData && t.binarySize < 0:
		return invalidf("%s %q: no data and no %s; set exactly one", kind, name, ParamBinaryDataSize)
	}
	t.data, t.decoded, t.decodedAs = j.Data, j.decoded, j.decodedAs
	return nil
}

// splitBinary checks that the binary_data_size values of ts add up to the
// tail exactly and gives each binary tensor its slice of it as data.
// hasHeader is false when the Inference-Header-Content-Length header was
// absent.
func splitBinary(ts []restTensor, tail []byte, hasHeader bool) error {
	var sum int64
	binary := false
	for _, t := range ts {
		if t.binarySize < 0 {
			continue
		}
		binary = true
		if sum > math.MaxInt64-t.binarySize {
			sum = math.MaxInt64
		} else {
			sum += t.binarySize
		}
	}
	if binary && !hasHeader {
		return invalidf("binary data requires the %s header", HeaderInferenceHeaderContentLength)
	}
	if sum != int64(len(tail)) {
		return invalidf("binary_data_size values add up to %d bytes but %d bytes follow the JSON header", sum, len(tail))
	}
	off := 0
	for i := range ts {
		if ts[i].binarySize < 0 {
			continue
		}
		end := off + int(ts[i].binarySize)
		ts[i].data = tail[off:end:end]
		off = end
	}
	return nil
}

// decodeTensorData decodes t's data: binary when t is (splitBinary gave
// it its slice of the tail), else JSON. maxElements bounds JSON allocation;
// view lets binary data alias the body (tensor.ViewRaw).
func decodeTensorData(t *restTensor, maxElements int64, view bool) (tensor.Tensor, error) {
	if t.shm {
		return tensor.Tensor{Name: t.name, Datatype: t.datatype, Shape: t.shape}, nil
	}
	if t.binarySize >= 0 {
		if view {
			return tensor.ViewRaw(t.name, t.datatype, t.shape, t.data)
		}
		return tensor.DecodeRaw(t.name, t.datatype, t.shape, t.data)
	}
	// Every JSON element takes at least one byte plus a separator, so a
	// shape that needs more elements than the text could hold fails here,
	// before the decoder sees a count it might allocate for.
	if t.count > 0 && t.count > int64(len(t.data)-1)/2 {
		return tensor.Tensor{}, fmt.Errorf("shape %v needs %d elements but the data is only %d bytes of JSON", t.shape, t.count, len(t.data))
	}
	if t.decoded != nil && t.decodedAs.datatype == t.datatype && slices.Equal(t.decodedAs.shape, t.shape) {
		return tensor.Tensor{Name: t.name, Datatype: t.datatype, Shape: t.shape, Data: t.decoded}, nil
	}
	v, err := tensor.DecodeJSONData(t.datatype, t.shape, t.data, maxElements)
	if err != nil {
		return tensor.Tensor{}, err
	}
	return tensor.Tensor{Name: t.name, Datatype: t.datatype, Shape: t.shape, Data: v}, nil
}

// splitBody separates the JSON part and the binary tail of a body according
// to headerLen (-1 = header absent). Requests may not use 0.
func splitBody(body []byte, headerLen int, request bool) (header, tail []byte, err error) {
	switch {
	case headerLen == -1:
		return body, nil, nil
	case headerLen < 0 || headerLen > len(body):
		return nil, nil, invalidf("%s is %d; it must be between 0 and the body length %d",
			HeaderInferenceHeaderContentLength, headerLen, len(body))
	case headerLen == 0 && request:
		return nil, nil, invalidf("raw binary requests (%s: 0) are not supported", HeaderInferenceHeaderContentLength)
	}
	return body[:headerLen], body[headerLen:], nil
}
