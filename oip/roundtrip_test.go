package oip

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// A request codec sends a request through one wire form and back.
type requestCodec struct {
	name string
	// exact codecs carry every bit pattern (NaN payloads, -0, non-UTF-8
	// BYTES); REST JSON does not.
	exact bool
	// rest codecs do not carry Model and Version (they are in the URL).
	rest      bool
	roundTrip func(t *testing.T, req *InferRequest) (*InferRequest, error)
}

func anyHalf(ts []tensor.Tensor) bool {
	for _, t := range ts {
		if needsRaw(t.Datatype) {
			return true
		}
	}
	return false
}

func inputTensors(req *InferRequest) []tensor.Tensor {
	var ts []tensor.Tensor
	for _, in := range req.Inputs {
		ts = append(ts, in.Tensor)
	}
	return ts
}

// restRequestRoundTrip encodes with binary chosen per input and checks the
// framing before decoding.
func restRequestRoundTrip(t *testing.T, req *InferRequest, binary func(int) bool) (*InferRequest, error) {
	t.Helper()
	body, hl, err := encodeRESTRequest(req, binary, false)
	if err != nil {
		return nil, err
	}
	anyBinary := false
	for i := range req.Inputs {
		anyBinary = anyBinary || binary(i)
	}
	checkBinaryFraming(t, body, hl, anyBinary, "inputs")
	return DecodeRESTRequest(body, hl, Limits{MaxElements: 1 << 20})
}

// checkBinaryFraming checks what the binary-data extension requires of a
// body: headerLen is the length of the JSON part (-1 when nothing is binary),
// every binary tensor has binary_data_size and no data, and
// len(body) == headerLen + Σ binary_data_size (Content-Length semantics).
func checkBinaryFraming(t *testing.T, body []byte, hl int, wantBinary bool, list string) {
	t.Helper()
	if !wantBinary {
		if hl != -1 {
			t.Fatalf("headerLen = %d for a body without binary data, want -1", hl)
		}
		if !json.Valid(body) {
			t.Fatalf("body is not valid JSON: %.200s", body)
		}
		return
	}
	if hl < 0 || hl > len(body) {
		t.Fatalf("headerLen = %d for a %d-byte body", hl, len(body))
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(body[:hl], &hdr); err != nil {
		t.Fatalf("JSON part body[:%d] does not parse: %v", hl, err)
	}
	var tensors []struct {
		Name       string                     `json:"name"`
		Parameters map[string]json.RawMessage `json:"parameters"`
		Data       json.RawMessage            `json:"data"`
	}
	if err := json.Unmarshal(hdr[list], &tensors); err != nil {
		t.Fatalf("%s: %v", list, err)
	}
	sum := 0
	for _, e := range tensors {
		raw, ok := e.Parameters[ParamBinaryDataSize]
		if !ok {
			if e.Data == nil {
				t.Errorf("%q has neither data nor binary_data_size", e.Name)
			}
			continue
		}
		if e.Data != nil {
			t.Errorf("%q has both data and binary_data_size", e.Name)
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("%q: binary_data_size %s: %v", e.Name, raw, err)
		}
		sum += n
	}
	if len(body) != hl+sum {
		t.Fatalf("len(body) = %d, want headerLen %d + Σ binary_data_size %d", len(body), hl, sum)
	}
}

func protoRequestRoundTrip(t *testing.T, req *InferRequest, raw bool) (*InferRequest, error) {
	t.Helper()
	pb, err := ToProtoRequest(req, raw)
	if err != nil {
		return nil, err
	}
	forced := anyHalf(inputTensors(req))
	if wantRaw := (raw || forced) && len(req.Inputs) > 0; (len(pb.RawInputContents) > 0) != wantRaw {
		t.Fatalf("raw_input_contents has %d entries; want raw = %v", len(pb.RawInputContents), wantRaw)
	}
	for _, in := range pb.Inputs {
		if (in.Contents != nil) == (len(pb.RawInputContents) > 0) {
			t.Fatalf("input %q: contents set = %v with %d raw entries", in.Name, in.Contents != nil, len(pb.RawInputContents))
		}
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var back inferencepb.ModelInferRequest
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	got, usedRaw, err := FromProtoRequest(&back, Limits{MaxElements: 1 << 20})
	if err != nil {
		return nil, err
	}
	if usedRaw != (len(pb.RawInputContents) > 0) {
		t.Fatalf("usedRaw = %v, want %v", usedRaw, len(pb.RawInputContents) > 0)
	}
	return got, nil
}

var requestCodecs = []requestCodec{
	{name: "rest-json", rest: true, roundTrip: func(t *testing.T, r *InferRequest) (*InferRequest, error) {
		return restRequestRoundTrip(t, r, func(int) bool { return false })
	}},
	{name: "rest-binary", rest: true, exact: true, roundTrip: func(t *testing.T, r *InferRequest) (*InferRequest, error) {
		return restRequestRoundTrip(t, r, func(int) bool { return true })
	}},
	{name: "rest-mixed", rest: true, roundTrip: func(t *testing.T, r *InferRequest) (*InferRequest, error) {
		return restRequestRoundTrip(t, r, func(i int) bool { return i%2 == 1 })
	}},
	{name: "grpc-typed", exact: true, roundTrip: func(t *testing.T, r *InferRequest) (*InferRequest, error) {
		return protoRequestRoundTrip(t, r, false)
	}},
	{name: "grpc-raw", exact: true, roundTrip: func(t *testing.T, r *InferRequest) (*InferRequest, error) {
		return protoRequestRoundTrip(t, r, true)
	}},
}

// sampleRequest has, for each datatype given, a [2,3] input, a scalar input
// and an empty [0,4] input, parameters of every kind at every level, and
// requested outputs.
func sampleRequest(t *testing.T, id string, exotic bool, dts ...tensor.Datatype) *InferRequest {
	req := &InferRequest{
		Model:      "m",
		Version:    "3",
		ID:         id,
		Parameters: allParams("req"),
		Outputs: []RequestedOutput{
			{Name: "OUTPUT0", Parameters: allParams("out")},
			{Name: "OUTPUT1"},
		},
	}
	for _, d := range dts {
		req.Inputs = append(req.Inputs,
			InferInput{Tensor: sampleTensor(t, "IN_"+string(d), d, []int64{2, 3}, exotic), Parameters: allParams("in")},
			InferInput{Tensor: sampleTensor(t, "SCALAR_"+string(d), d, []int64{}, exotic)},
			InferInput{Tensor: sampleTensor(t, "EMPTY_"+string(d), d, []int64{0, 4}, exotic)},
		)
	}
	return req
}

func TestRequestRoundTrip(t *testing.T) {
	cases := make([][]tensor.Datatype, 0, len(tensor.Datatypes)+1)
	for _, d := range tensor.Datatypes {
		cases = append(cases, []tensor.Datatype{d})
	}
	cases = append(cases, tensor.Datatypes) // every datatype in one request
	for _, c := range requestCodecs {
		for _, dts := range cases {
			for _, id := range ids {
				for _, exotic := range []bool{false, true} {
					if exotic && !c.exact {
						continue
					}
					name := fmt.Sprintf("%s/%v/id=%s/exotic=%v", c.name, dts, id.name, exotic)
					if len(dts) > 1 {
						name = fmt.Sprintf("%s/all/id=%s/exotic=%v", c.name, id.name, exotic)
					}
					t.Run(name, func(t *testing.T) {
						req := sampleRequest(t, id.id, exotic, dts...)
						reqParams := maps.Clone(req.Parameters)
						got, err := c.roundTrip(t, req)
						if err != nil {
							t.Fatal(err)
						}
						want := *req
						if c.rest {
							want.Model, want.Version = "", ""
						}
						if err := requestsEqual(&want, got); err != nil {
							t.Fatal(err)
						}
						if err := paramsEqual(reqParams, req.Parameters); err != nil {
							t.Fatalf("caller's parameters changed: %v", err)
						}
					})
				}
			}
		}
	}
}

// A response codec sends a response through one wire form and back.
type responseCodec struct {
	name      string
	exact     bool
	roundTrip func(t *testing.T, resp *InferResponse) (*InferResponse, error)
}

func restResponseRoundTrip(t *testing.T, resp *InferResponse, binary func(string) bool) (*InferResponse, error) {
	t.Helper()
	body, hl, err := EncodeRESTResponse(resp, binary)
	if err != nil {
		return nil, err
	}
	anyBinary := false
	for _, o := range resp.Outputs {
		anyBinary = anyBinary || (binary != nil && binary(o.Name))
	}
	checkBinaryFraming(t, body, hl, anyBinary, "outputs")
	return DecodeRESTResponse(body, hl)
}

func protoResponseRoundTrip(t *testing.T, resp *InferResponse, raw bool) (*InferResponse, error) {
	t.Helper()
	pb, err := ToProtoResponse(resp, raw)
	if err != nil {
		return nil, err
	}
	var ts []tensor.Tensor
	for _, o := range resp.Outputs {
		ts = append(ts, o.Tensor)
	}
	if wantRaw := (raw || anyHalf(ts)) && len(ts) > 0; (len(pb.RawOutputContents) > 0) != wantRaw {
		t.Fatalf("raw_output_contents has %d entries; want raw = %v", len(pb.RawOutputContents), wantRaw)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var back inferencepb.ModelInferResponse
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	return FromProtoResponse(&back)
}

// halfBinary makes every other output (by position in the response) binary.
func halfBinary(resp *InferResponse) func(string) bool {
	set := map[string]bool{}
	for i, o := range resp.Outputs {
		set[o.Name] = i%2 == 0
	}
	return func(name string) bool { return set[name] }
}

var responseCodecs = []responseCodec{
	{name: "rest-json", roundTrip: func(t *testing.T, r *InferResponse) (*InferResponse, error) {
		return restResponseRoundTrip(t, r, nil)
	}},
	{name: "rest-binary", exact: true, roundTrip: func(t *testing.T, r *InferResponse) (*InferResponse, error) {
		return restResponseRoundTrip(t, r, func(string) bool { return true })
	}},
	{name: "rest-half-binary", roundTrip: func(t *testing.T, r *InferResponse) (*InferResponse, error) {
		return restResponseRoundTrip(t, r, halfBinary(r))
	}},
	{name: "grpc-typed", exact: true, roundTrip: func(t *testing.T, r *InferResponse) (*InferResponse, error) {
		return protoResponseRoundTrip(t, r, false)
	}},
	{name: "grpc-raw", exact: true, roundTrip: func(t *testing.T, r *InferResponse) (*InferResponse, error) {
		return protoResponseRoundTrip(t, r, true)
	}},
}

func sampleResponse(t *testing.T, id string, exotic bool, dts ...tensor.Datatype) *InferResponse {
	resp := &InferResponse{Model: "m", Version: "3", ID: id, Parameters: allParams("resp")}
	for _, d := range dts {
		resp.Outputs = append(resp.Outputs,
			InferOutput{Tensor: sampleTensor(t, "OUT_"+string(d), d, []int64{3, 2}, exotic), Parameters: allParams("out")},
			InferOutput{Tensor: sampleTensor(t, "SCALAR_"+string(d), d, nil, exotic)},
			InferOutput{Tensor: sampleTensor(t, "EMPTY_"+string(d), d, []int64{4, 0}, exotic)},
		)
	}
	return resp
}

func TestResponseRoundTrip(t *testing.T) {
	cases := make([][]tensor.Datatype, 0, len(tensor.Datatypes)+1)
	for _, d := range tensor.Datatypes {
		cases = append(cases, []tensor.Datatype{d})
	}
	cases = append(cases, tensor.Datatypes)
	for _, c := range responseCodecs {
		for _, dts := range cases {
			for _, id := range ids {
				for _, exotic := range []bool{false, true} {
					if exotic && !c.exact {
						continue
					}
					name := fmt.Sprintf("%s/%v/id=%s/exotic=%v", c.name, dts, id.name, exotic)
					if len(dts) > 1 {
						name = fmt.Sprintf("%s/all/id=%s/exotic=%v", c.name, id.name, exotic)
					}
					t.Run(name, func(t *testing.T) {
						resp := sampleResponse(t, id.id, exotic, dts...)
						got, err := c.roundTrip(t, resp)
						if err != nil {
							t.Fatal(err)
						}
						if err := responsesEqual(resp, got); err != nil {
							t.Fatal(err)
						}
					})
				}
			}
		}
	}
}

// A response without a version, id or parameters omits those members.
func TestEncodeRESTResponseOmitsEmpty(t *testing.T) {
	resp := &InferResponse{Model: "m", Outputs: []InferOutput{{Tensor: tensor.Tensor{Name: "o", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{7}}}}}
	body, hl, err := EncodeRESTResponse(resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"model_name":"m","outputs":[{"name":"o","shape":[1],"datatype":"INT32","data":[7]}]}`
	if string(body) != want || hl != -1 {
		t.Fatalf("got %s (headerLen %d), want %s", body, hl, want)
	}
}

func TestEncodeRESTRequestOmitsEmpty(t *testing.T) {
	req := &InferRequest{Model: "m", Version: "1", Parameters: Parameters{}, Inputs: []InferInput{{
		Tensor: tensor.Tensor{Name: "i", Datatype: tensor.Bool, Shape: []int64{2}, Data: []bool{true, false}}, Parameters: Parameters{},
	}}}
	body, hl, err := EncodeRESTRequest(req, RESTEncoding{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"inputs":[{"name":"i","shape":[2],"datatype":"BOOL","data":[true,false]}]}`
	if string(body) != want || hl != -1 {
		t.Fatalf("got %s (headerLen %d), want %s", body, hl, want)
	}
}

// BinaryOutputs adds binary_data_output to the request without changing the
// caller's parameters, and the server side reads it back through
// BinaryOutput, where a per-output binary_data overrides it.
func TestEncodeRESTRequestBinaryOutputs(t *testing.T) {
	callerParams := Parameters{"x": int64(1), ParamBinaryDataOutput: false}
	req := &InferRequest{
		Parameters: callerParams,
		Inputs:     []InferInput{{Tensor: sampleTensor(t, "i", tensor.FP32, []int64{2}, false)}},
		Outputs: []RequestedOutput{
			{Name: "JSON", Parameters: Parameters{ParamBinaryData: false}},
			{Name: "BIN"},
		},
	}
	body, hl, err := EncodeRESTRequest(req, RESTEncoding{BinaryOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := callerParams[ParamBinaryDataOutput]; v != false || len(callerParams) != 2 {
		t.Fatalf("caller's parameters changed: %v", callerParams)
	}
	got, err := DecodeRESTRequest(body, hl, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := paramsEqual(Parameters{"x": int64(1), ParamBinaryDataOutput: true}, got.Parameters); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"JSON": false, "BIN": true, "UNLISTED": true} {
		if b := got.BinaryOutput(name); b != want {
			t.Errorf("BinaryOutput(%q) = %v, want %v", name, b, want)
		}
	}
}

// binary_data_size in a caller's input parameters is framing the encoder
// controls: it is dropped for JSON inputs and replaced for binary ones.
func TestEncodeRESTRequestDropsCallerBinaryDataSize(t *testing.T) {
	req := &InferRequest{Inputs: []InferInput{{
		Tensor:     tensor.Tensor{Name: "i", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{5}},
		Parameters: Parameters{ParamBinaryDataSize: int64(999)},
	}}}
	for _, binary := range []bool{false, true} {
		body, hl, err := EncodeRESTRequest(req, RESTEncoding{BinaryInputs: binary})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRESTRequest(body, hl, Limits{})
		if err != nil {
			t.Fatalf("binary=%v: %v\n%s", binary, err, body)
		}
		if got.Inputs[0].Parameters != nil || got.Inputs[0].Data.([]int32)[0] != 5 {
			t.Fatalf("binary=%v: got %+v", binary, got.Inputs[0])
		}
	}
}

func TestEncodeRejectsBadInput(t *testing.T) {
	good := tensor.Tensor{Name: "i", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{5}}
	cases := []struct {
		name string
		req  InferRequest
	}{
		{"wrong data type", InferRequest{Inputs: []InferInput{{Tensor: tensor.Tensor{Name: "i", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int64{5}}}}}},
		{"count mismatch", InferRequest{Inputs: []InferInput{{Tensor: tensor.Tensor{Name: "i", Datatype: tensor.Int32, Shape: []int64{2}, Data: []int32{5}}}}}},
		{"nested parameter", InferRequest{Parameters: Parameters{"p": map[string]any{}}, Inputs: []InferInput{{Tensor: good}}}},
		{"nil parameter", InferRequest{Inputs: []InferInput{{Tensor: good, Parameters: Parameters{"p": nil}}}}},
		{"NaN parameter", InferRequest{Outputs: []RequestedOutput{{Name: "o", Parameters: Parameters{"p": nan()}}}, Inputs: []InferInput{{Tensor: good}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, enc := range []RESTEncoding{{}, {BinaryInputs: true}} {
				if _, _, err := EncodeRESTRequest(&c.req, enc); err == nil {
					t.Errorf("EncodeRESTRequest(%+v) succeeded", enc)
				}
			}
			if c.name == "NaN parameter" {
				return // a valid gRPC double
			}
			for _, raw := range []bool{false, true} {
				if _, err := ToProtoRequest(&c.req, raw); err == nil {
					t.Errorf("ToProtoRequest(raw=%v) succeeded", raw)
				}
			}
		})
	}
}
