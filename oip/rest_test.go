package oip

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oipkit/oipkit/tensor"
)

func nan() float64 { return math.NaN() }

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/rest/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustTensor(t *testing.T, name string, d tensor.Datatype, shape []int64, data any) tensor.Tensor {
	t.Helper()
	tt, err := tensor.New(name, d, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// A literal Triton-style binary request (JSON header + 16 little-endian bytes)
// decodes to exact values, and the encoder writes exactly those bytes.
func TestGoldenBinaryRequest(t *testing.T) {
	body := readTestdata(t, "binary_int32_request.body")
	const headerLen = 165
	if tail := body[headerLen:]; !bytes.Equal(tail, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}) {
		t.Fatalf("testdata tail is % x", tail)
	}
	got, err := DecodeRESTRequest(body, headerLen, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &InferRequest{
		Inputs:  []InferInput{{Tensor: mustTensor(t, "INPUT0", tensor.Int32, []int64{2, 2}, []int32{1, 2, 3, 4})}},
		Outputs: []RequestedOutput{{Name: "OUTPUT0", Parameters: Parameters{ParamBinaryData: true}}},
	}
	if err := requestsEqual(want, got); err != nil {
		t.Fatal(err)
	}
	if got.Inputs[0].Parameters != nil {
		t.Errorf("binary_data_size left in the input's parameters: %v", got.Inputs[0].Parameters)
	}
	enc, hl, err := EncodeRESTRequest(want, RESTEncoding{BinaryInputs: true})
	if err != nil {
		t.Fatal(err)
	}
	if hl != headerLen || !bytes.Equal(enc, body) {
		t.Fatalf("encoded (headerLen %d):\n%q\nwant (headerLen %d):\n%q", hl, enc, headerLen, body)
	}
}

// A hand-formatted request mixing JSON and binary inputs, with BYTES and BOOL
// in binary form.
func TestGoldenTritonMixedRequest(t *testing.T) {
	body := readTestdata(t, "triton_mixed_request.body")
	got, err := DecodeRESTRequest(body, 710, Limits{MaxElements: 16})
	if err != nil {
		t.Fatal(err)
	}
	want := &InferRequest{
		ID:         "triton-1",
		Parameters: Parameters{ParamBinaryDataOutput: true},
		Inputs: []InferInput{
			{Tensor: mustTensor(t, "INPUT0", tensor.Int32, []int64{1, 4}, []int32{1, -2, 256, math.MaxInt32})},
			{Tensor: mustTensor(t, "INPUT1", tensor.FP32, []int64{2}, []float32{0.5, -1.25})},
			{Tensor: mustTensor(t, "INPUT2", tensor.Bytes, []int64{2}, [][]byte{[]byte("a"), []byte("bcd")})},
			{Tensor: mustTensor(t, "INPUT3", tensor.Bool, []int64{3}, []bool{true, false, true})},
		},
		Outputs: []RequestedOutput{{Name: "OUTPUT0", Parameters: Parameters{ParamBinaryData: false}}},
	}
	if err := requestsEqual(want, got); err != nil {
		t.Fatal(err)
	}
	if got.BinaryOutput("OUTPUT0") || !got.BinaryOutput("OUTPUT1") {
		t.Errorf("BinaryOutput: OUTPUT0 %v (want false), OUTPUT1 %v (want true)", got.BinaryOutput("OUTPUT0"), got.BinaryOutput("OUTPUT1"))
	}
}

// A literal JSON request with nested data and every kind of number.
func TestGoldenNestedJSONRequest(t *testing.T) {
	body := readTestdata(t, "nested_json_request.json")
	got, err := DecodeRESTRequest(body, -1, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &InferRequest{
		ID: "é-✓",
		Parameters: Parameters{
			"a": "x", "b": int64(1), "c": 1.5, "d": true,
			"big": uint64(math.MaxUint64), "neg": int64(math.MinInt64),
		},
		Inputs: []InferInput{
			{Tensor: mustTensor(t, "INPUT0", tensor.Int32, []int64{2, 3}, []int32{1, 2, 3, 4, 5, 6})},
			{Tensor: mustTensor(t, "INPUT1", tensor.FP64, []int64{2, 2, 1}, []float64{0.5, -1.25, 1e300, 0})},
			{Tensor: mustTensor(t, "INPUT2", tensor.Bytes, []int64{3}, [][]byte{[]byte("abc"), {}, []byte("é\n")})},
			{Tensor: mustTensor(t, "INPUT3", tensor.Uint64, []int64{2}, []uint64{math.MaxUint64, 0}), Parameters: Parameters{"note": "max"}},
		},
		Outputs: []RequestedOutput{{Name: "OUTPUT0", Parameters: Parameters{ParamBinaryData: true}}, {Name: "OUTPUT1"}},
	}
	if err := requestsEqual(want, got); err != nil {
		t.Fatal(err)
	}
	if got.Inputs[2].Parameters != nil {
		t.Errorf(`"parameters": {} decoded as %#v, want nil`, got.Inputs[2].Parameters)
	}
}

// A response body as the encoder writes it: OUTPUT0 binary, OUTPUT1 JSON.
func TestGoldenBinaryResponse(t *testing.T) {
	body := readTestdata(t, "binary_int32_response.body")
	const headerLen = 222
	resp := &InferResponse{
		Model: "add_sub", Version: "1", ID: "42",
		Outputs: []InferOutput{
			{Tensor: mustTensor(t, "OUTPUT0", tensor.Int32, []int64{1, 4}, []int32{1, 2, 3, 4})},
			{Tensor: mustTensor(t, "OUTPUT1", tensor.Int32, []int64{4}, []int32{0, 1, 2, 3})},
		},
	}
	enc, hl, err := EncodeRESTResponse(resp, func(name string) bool { return name == "OUTPUT0" })
	if err != nil {
		t.Fatal(err)
	}
	if hl != headerLen || !bytes.Equal(enc, body) {
		t.Fatalf("encoded (headerLen %d):\n%q\nwant (headerLen %d):\n%q", hl, enc, headerLen, body)
	}
	got, err := DecodeRESTResponse(body, headerLen)
	if err != nil {
		t.Fatal(err)
	}
	if err := responsesEqual(resp, got); err != nil {
		t.Fatal(err)
	}
}

// The client decode keeps parameter values of any JSON kind and ignores
// unknown members.
func TestDecodeRESTResponsePermissive(t *testing.T) {
	body := `{"model_name":"m","extra":{"x":[1]},"parameters":{"headers":{"a":"b","n":2},"list":[1,2.5],"nil":null},
	"outputs":[{"name":"o","datatype":"INT8","shape":[2],"data":[[1],[-2]],"unknown":true}]}`
	got, err := DecodeRESTResponse([]byte(body), -1)
	if err != nil {
		t.Fatal(err)
	}
	wantParams := Parameters{
		"headers": map[string]any{"a": "b", "n": int64(2)},
		"list":    []any{int64(1), 2.5},
		"nil":     nil,
	}
	if !reflect.DeepEqual(got.Parameters, wantParams) {
		t.Errorf("parameters = %#v, want %#v", got.Parameters, wantParams)
	}
	if got.Parameters.Validate() == nil {
		t.Error("Validate accepted nested parameter values")
	}
	want := &InferResponse{Model: "m", Parameters: wantParams, Outputs: []InferOutput{{Tensor: mustTensor(t, "o", tensor.Int8, []int64{2}, []int8{1, -2})}}}
	if err := responsesEqual(want, got); err != nil {
		t.Fatal(err)
	}
}

// Parameter numbers: integral → int64, integral above MaxInt64 → uint64,
// otherwise float64; numbers beyond float64 keep their text.
func TestDecodeParameterNumbers(t *testing.T) {
	cases := []struct {
		json string
		want any
	}{
		{`0`, int64(0)},
		{`-0`, int64(0)},
		{`9223372036854775807`, int64(math.MaxInt64)},
		{`-9223372036854775808`, int64(math.MinInt64)},
		{`9223372036854775808`, uint64(1 << 63)},
		{`18446744073709551615`, uint64(math.MaxUint64)},
		{`18446744073709551616`, 18446744073709551616.0},
		{`-9223372036854775809`, -9223372036854775809.0},
		{`1.0`, 1.0},
		{`1e2`, 100.0},
		{`-0.0`, math.Copysign(0, -1)},
		{`1e400`, json.Number("1e400")},
		{`"s"`, "s"},
		{`true`, true},
		{`null`, nil},
	}
	for _, c := range cases {
		body := `{"parameters":{"p":` + c.json + `},"inputs":[]}`
		got, err := DecodeRESTRequest([]byte(body), -1, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		v, ok := got.Parameters["p"]
		if !ok {
			t.Fatalf("%s: parameter missing", c.json)
		}
		if f, isF := c.want.(float64); isF {
			if g, ok := v.(float64); !ok || math.Float64bits(g) != math.Float64bits(f) {
				t.Errorf("%s: got %#v (%T), want %#v", c.json, v, v, c.want)
			}
			continue
		}
		if !reflect.DeepEqual(v, c.want) {
			t.Errorf("%s: got %#v (%T), want %#v (%T)", c.json, v, v, c.want, c.want)
		}
	}
}

// Floats are written like encoding/json but always stay floats.
func TestAppendParamFloat(t *testing.T) {
	cases := map[float64]string{
		0: "0.0", 2: "2.0", -1.5: "-1.5", 1e20: "100000000000000000000.0", 1e21: "1e+21",
		1e-7: "1e-7", 1.5e-6: "0.0000015", math.MaxFloat64: "1.7976931348623157e+308",
		math.Copysign(0, -1): "-0.0",
	}
	for f, want := range cases {
		got, err := appendParamValue(nil, f)
		if err != nil || string(got) != want {
			t.Errorf("%v: got %s, %v; want %s", f, got, err, want)
		}
		var back float64
		if err := json.Unmarshal(got, &back); err != nil || math.Float64bits(back) != math.Float64bits(f) {
			t.Errorf("%s reads back as %v (%v)", got, back, err)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := appendParamValue(nil, f); err == nil {
			t.Errorf("%v: no error", f)
		}
	}
}

func TestDecodeRESTRequestErrors(t *testing.T) {
	const input = `{"name":"INPUT0","shape":[1,4],"datatype":"INT32","data":[1,2,3,4]}`
	withInput := func(in string) string { return `{"inputs":[` + in + `]}` }
	binHeader := `{"inputs":[{"name":"INPUT0","shape":[4],"datatype":"INT32","parameters":{"binary_data_size":16}}]}`
	binBody := func(tail int) []byte {
		return append([]byte(binHeader), make([]byte, tail)...)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)

	type decodeCase struct {
		name      string
		body      []byte
		headerLen int
		lim       Limits
		want      error
		msg       string // substring of the error text
	}
	cases := []decodeCase{
		{"empty body", nil, -1, Limits{}, ErrInvalid, "empty"},
		{"whitespace body", []byte(" \n"), -1, Limits{}, ErrInvalid, "empty"},
		{"malformed", []byte(`{"inputs": [`), -1, Limits{}, ErrInvalid, "malformed JSON"},
		{"trailing garbage", []byte(withInput(input) + "x"), -1, Limits{}, ErrInvalid, "malformed JSON"},
		{"not an object", []byte(`[1]`), -1, Limits{}, ErrInvalid, "JSON object"},
		{"null body", []byte(`null`), -1, Limits{}, ErrInvalid, "missing inputs"},
		{"missing inputs", []byte(`{}`), -1, Limits{}, ErrInvalid, "missing inputs"},
		{"outputs only", []byte(`{"outputs":[]}`), -1, Limits{}, ErrInvalid, "missing inputs"},
		{"null inputs", []byte(`{"inputs":null}`), -1, Limits{}, ErrInvalid, "missing inputs"},
		{"inputs object", []byte(`{"inputs":{}}`), -1, Limits{}, ErrInvalid, "inputs must be an array"},
		{"inputs string", []byte(`{"inputs":"x"}`), -1, Limits{}, ErrInvalid, "inputs must be an array"},
		{"input not object", []byte(`{"inputs":[5]}`), -1, Limits{}, ErrInvalid, "inputs"},
		{"id number", []byte(`{"id":42,"inputs":[` + input + `]}`), -1, Limits{}, ErrInvalid, "id must be a string"},
		{"id object", []byte(`{"id":{},"inputs":[` + input + `]}`), -1, Limits{}, ErrInvalid, "id must be a string"},
		{"parameters array", []byte(`{"parameters":[],"inputs":[` + input + `]}`), -1, Limits{}, ErrInvalid, "parameters must be an object"},
		{"missing name", []byte(withInput(`{"shape":[1],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "missing name"},
		{"empty name", []byte(withInput(`{"name":"","shape":[1],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "name is empty"},
		{"name number", []byte(withInput(`{"name":1,"shape":[1],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "name must be a string"},
		{"missing shape", []byte(withInput(`{"name":"a","datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "missing shape"},
		{"shape -1", []byte(withInput(`{"name":"a","shape":[-1,4],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape 1.5", []byte(withInput(`{"name":"a","shape":[1.5,16],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape 1.0", []byte(withInput(`{"name":"a","shape":[1.0],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape 1e0", []byte(withInput(`{"name":"a","shape":[1e0],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape string", []byte(withInput(`{"name":"a","shape":["1",16],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape null dim", []byte(withInput(`{"name":"a","shape":[1,null],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 1"},
		{"shape nested", []byte(withInput(`{"name":"a","shape":[[1]],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "dimension 0"},
		{"shape not array", []byte(withInput(`{"name":"a","shape":4,"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "shape must be an array"},
		{"shape beyond int64", []byte(withInput(`{"name":"a","shape":[9223372036854775808],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "int64"},
		{"shape overflow", []byte(withInput(`{"name":"a","shape":[4294967296,4294967296],"datatype":"INT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "overflow"},
		{"missing datatype", []byte(withInput(`{"name":"a","shape":[1],"data":[1]}`)), -1, Limits{}, ErrInvalid, "missing datatype"},
		{"unknown datatype", []byte(withInput(`{"name":"a","shape":[1],"datatype":"FLOAT32","data":[1]}`)), -1, Limits{}, ErrInvalid, "FLOAT32"},
		{"lower-case datatype", []byte(withInput(`{"name":"a","shape":[1],"datatype":"fp32","data":[1]}`)), -1, Limits{}, ErrInvalid, "fp32"},
		{"neither data nor binary", []byte(withInput(`{"name":"a","shape":[1],"datatype":"INT32"}`)), -1, Limits{}, ErrInvalid, "exactly one"},
		{"null data", []byte(withInput(`{"name":"a","shape":[1],"datatype":"INT32","data":null}`)), -1, Limits{}, ErrInvalid, "exactly one"},
		{"too few elements", []byte(withInput(`{"name":"a","shape":[1,16],"datatype":"INT32","data":[1,2,3]}`)), -1, Limits{}, ErrInvalid, `input "a"`},
		{"too many elements", []byte(withInput(`{"name":"a","shape":[2],"datatype":"INT32","data":[1,2,3]}`)), -1, Limits{}, ErrInvalid, `input "a"`},
		{"huge shape, 3 values", []byte(withInput(`{"name":"a","shape":[1000000000],"datatype":"FP64","data":[1,2,3]}`)), -1, Limits{}, ErrInvalid, "1000000000"},
		{"element limit", []byte(withInput(input)), -1, Limits{MaxElements: 3}, ErrTooLarge, "limit"},
		{"element limit binary", binBody(16), len(binHeader), Limits{MaxElements: 3}, ErrTooLarge, "limit"},
		{"output without name", []byte(`{"inputs":[` + input + `],"outputs":[{}]}`), -1, Limits{}, ErrInvalid, "output 0: missing name"},
		{"output empty name", []byte(`{"inputs":[` + input + `],"outputs":[{"name":""}]}`), -1, Limits{}, ErrInvalid, "output 0: name is empty"},
		{"output name number", []byte(`{"inputs":[` + input + `],"outputs":[{"name":7}]}`), -1, Limits{}, ErrInvalid, "must be a string"},
		{"outputs object", []byte(`{"inputs":[` + input + `],"outputs":{}}`), -1, Limits{}, ErrInvalid, "outputs must be an array"},
		{"output parameters string", []byte(`{"inputs":[` + input + `],"outputs":[{"name":"o","parameters":"x"}]}`), -1, Limits{}, ErrInvalid, "parameters must be an object"},
		{"deep data", []byte(withInput(`{"name":"a","shape":[1],"datatype":"INT32","data":` + deep + `}`)), -1, Limits{}, ErrInvalid, "depth"},
		{"deep parameters", []byte(`{"parameters":{"p":` + deep + `},"inputs":[]}`), -1, Limits{}, ErrInvalid, "depth"},
		{"deep body", []byte(deep), -1, Limits{}, ErrInvalid, "depth"},
		{"deep objects", []byte(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)), -1, Limits{}, ErrInvalid, "depth"},
		{"data nested past MaxJSONDepth", []byte(withInput(`{"name":"a","shape":[1],"datatype":"INT32","data":` + strings.Repeat("[", 100) + "1" + strings.Repeat("]", 100) + `}`)), -1, Limits{}, ErrInvalid, `input "a"`},

		// Framing.
		{"headerLen > len(body)", binBody(16), len(binHeader) + 17, Limits{}, ErrInvalid, "Inference-Header-Content-Length"},
		{"headerLen negative", binBody(16), -2, Limits{}, ErrInvalid, "Inference-Header-Content-Length"},
		{"headerLen 0 (raw binary request)", binBody(16), 0, Limits{}, ErrInvalid, "raw binary requests"},
		{"tail one byte extra", binBody(17), len(binHeader), Limits{}, ErrInvalid, "add up to 16 bytes but 17"},
		{"tail one byte short", binBody(15), len(binHeader), Limits{}, ErrInvalid, "add up to 16 bytes but 15"},
		{"no tail", binBody(0), len(binHeader), Limits{}, ErrInvalid, "add up to 16 bytes but 0"},
		{"binary without header", binBody(16), -1, Limits{}, ErrInvalid, "malformed JSON"},
		{"binary without header, no tail", binBody(0), -1, Limits{}, ErrInvalid, "requires the Inference-Header-Content-Length header"},
		{"tail on a JSON request", append([]byte(withInput(input)), 0), len(withInput(input)), Limits{}, ErrInvalid, "add up to 0 bytes but 1"},
		{"headerLen cuts the JSON", binBody(16), len(binHeader) - 1, Limits{}, ErrInvalid, "malformed JSON"},
	}
	// Binary bodies: one input object, its tail, and the header length of
	// the JSON part.
	for _, b := range []struct {
		name, in string
		tail     []byte
		msg      string
	}{
		{"data and binary", `{"name":"a","shape":[1],"datatype":"INT32","data":[1],"parameters":{"binary_data_size":4}}`, []byte{1, 0, 0, 0}, "both"},
		{"binary size negative", `{"name":"a","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":-4}}`, []byte{}, "non-negative integer"},
		{"binary size float", `{"name":"a","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":0.0}}`, []byte{}, "non-negative integer"},
		{"binary size string", `{"name":"a","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":"0"}}`, []byte{}, "non-negative integer"},
		{"binary size beyond int64", `{"name":"a","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":9223372036854775808}}`, []byte{}, "non-negative integer"},
		{"binary sizes overflow", `{"name":"a","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":9223372036854775807}},{"name":"b","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":9223372036854775807}}`, []byte{1, 2, 3, 4}, "but 4 bytes"},
		{"binary size mismatches shape", `{"name":"a","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":4}}`, []byte{1, 0, 0, 0}, `input "a"`},
		{"binary BYTES framing", `{"name":"a","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":4}}`, []byte{9, 0, 0, 0}, `input "a"`},
		{"binary BOOL byte 2", `{"name":"a","shape":[1],"datatype":"BOOL","parameters":{"binary_data_size":1}}`, []byte{2}, `input "a"`},
	} {
		hdr := withInput(b.in)
		cases = append(cases, decodeCase{b.name, append([]byte(hdr), b.tail...), len(hdr), Limits{}, ErrInvalid, b.msg})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRESTRequest(c.body, c.headerLen, c.lim)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (request %+v), want an error wrapping %v", err, req, c.want)
			}
			if req != nil {
				t.Errorf("request %+v returned with the error", req)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
			if c.want == ErrInvalid && errors.Is(err, ErrTooLarge) || c.want == ErrTooLarge && errors.Is(err, ErrInvalid) {
				t.Errorf("error %q wraps both ErrInvalid and ErrTooLarge", err)
			}
		})
	}
}

// Error messages about header lengths and tails name both numbers.
func TestDecodeRESTFramingMessages(t *testing.T) {
	body := []byte(`{"inputs":[]}`)
	_, err := DecodeRESTRequest(body, 99, Limits{})
	if err == nil || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "13") {
		t.Errorf("got %v, want both 99 and 13 in the message", err)
	}
}

// A shape claiming a billion elements with three values fails fast without
// allocating for the shape.
func TestDecodeHugeShapeSmallAllocation(t *testing.T) {
	for _, d := range []string{"FP64", "BYTES", "BOOL"} {
		data := `[1,2,3]`
		switch d {
		case "BYTES":
			data = `["a","b","c"]`
		case "BOOL":
			data = `[true,false,true]`
		}
		body := []byte(`{"inputs":[{"name":"a","shape":[1000000000],"datatype":"` + d + `","data":` + data + `}]}`)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := DecodeRESTRequest(body, -1, Limits{})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: got %v, want ErrInvalid", d, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: allocated %d bytes", d, alloc)
		}
	}
}

func TestDecodeRESTResponseErrors(t *testing.T) {
	const out = `{"name":"o","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":8}}`
	hdr := `{"model_name":"m","outputs":[` + out + `]}`
	cases := []struct {
		name      string
		body      []byte
		headerLen int
	}{
		{"empty", nil, -1},
		{"malformed", []byte(`{"outputs":[`), -1},
		{"missing outputs", []byte(`{"model_name":"m"}`), -1},
		{"model_name number", []byte(`{"model_name":1,"outputs":[]}`), -1},
		{"model_version number", []byte(`{"model_version":1,"outputs":[]}`), -1},
		{"bad shape", []byte(`{"outputs":[{"name":"o","shape":[-1],"datatype":"INT32","data":[]}]}`), -1},
		{"unknown datatype", []byte(`{"outputs":[{"name":"o","shape":[1],"datatype":"int32","data":[1]}]}`), -1},
		{"no data", []byte(`{"outputs":[{"name":"o","shape":[1],"datatype":"INT32"}]}`), -1},
		{"count mismatch", []byte(`{"outputs":[{"name":"o","shape":[2],"datatype":"INT32","data":[1]}]}`), -1},
		{"tail short", append([]byte(hdr), make([]byte, 7)...), len(hdr)},
		{"tail long", append([]byte(hdr), make([]byte, 9)...), len(hdr)},
		{"binary without header", []byte(hdr), -1},
		{"headerLen too big", append([]byte(hdr), make([]byte, 8)...), len(hdr) + 9},
		{"headerLen 0", append([]byte(hdr), make([]byte, 8)...), 0},
		{"deep", []byte(strings.Repeat("[", 100000)), -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := DecodeRESTResponse(c.body, c.headerLen)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v (%+v), want ErrInvalid", err, resp)
			}
		})
	}
	// And the same body with the right tail decodes.
	body := append([]byte(hdr), 1, 0, 0, 0, 2, 0, 0, 0)
	resp, err := DecodeRESTResponse(body, len(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Outputs[0].Data.([]int32); got[0] != 1 || got[1] != 2 || resp.Outputs[0].Parameters != nil {
		t.Fatalf("got %+v", resp.Outputs[0])
	}
}

// Binary BYTES inputs alias the body (documented); every other datatype is
// copied.
func TestDecodeBinaryBytesAliasBody(t *testing.T) {
	hdr := `{"inputs":[{"name":"a","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":6}}]}`
	body := append([]byte(hdr), 2, 0, 0, 0, 'h', 'i')
	req, err := DecodeRESTRequest(body, len(hdr), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	el := req.Inputs[0].Data.([][]byte)[0]
	if string(el) != "hi" || !utf8.Valid(el) {
		t.Fatalf("got %q", el)
	}
	if cap(el) != len(el) {
		t.Errorf("element has spare capacity %d; appending to it would overwrite the body", cap(el))
	}
}

func TestParseHeaderLength(t *testing.T) {
	for _, c := range []struct {
		values []string
		body   int
		want   int
		err    string
	}{
		{nil, 10, -1, ""},
		{[]string{"4"}, 10, 4, ""},
		{[]string{" 10 "}, 10, 10, ""},
		{[]string{"0"}, 10, 0, ""},
		{[]string{"11"}, 10, 0, "larger than the 10-byte body"},
		{[]string{"1073741824"}, 13, 0, "larger than the 13-byte body"},
		{[]string{"-1"}, 10, 0, "negative"},
		{[]string{"x"}, 10, 0, "not an integer"},
		{[]string{"4", "4"}, 10, 0, "given 2 times"},
	} {
		got, err := ParseHeaderLength(c.values, c.body)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseHeaderLength(%q, %d) = %d, %v, want %d", c.values, c.body, got, err, c.want)
		case c.err != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseHeaderLength(%q, %d) error %v, want ErrInvalid containing %q", c.values, c.body, err, c.err)
		}
	}
}
