package oip

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

func int32Input(name string, shape []int64, vs ...int32) *inferencepb.ModelInferRequest_InferInputTensor {
	return &inferencepb.ModelInferRequest_InferInputTensor{
		Name: name, Datatype: "INT32", Shape: shape,
		Contents: &inferencepb.InferTensorContents{IntContents: vs},
	}
}

func rawInput(name, datatype string, shape []int64) *inferencepb.ModelInferRequest_InferInputTensor {
	return &inferencepb.ModelInferRequest_InferInputTensor{Name: name, Datatype: datatype, Shape: shape}
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return b
}

// Exact values from hand-built messages in both forms.
func TestFromProtoRequestGolden(t *testing.T) {
	typed := &inferencepb.ModelInferRequest{
		ModelName: "add_sub", ModelVersion: "1", Id: "x",
		Parameters: map[string]*inferencepb.InferParameter{
			"b":     {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
			"i":     {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: -3}},
			"s":     {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "v"}},
			"d":     {ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: 0.25}},
			"u":     {ParameterChoice: &inferencepb.InferParameter_Uint64Param{Uint64Param: 7}},
			"unset": {},
			"nil":   nil,
		},
		Inputs:  []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", []int64{2, 2}, 1, 2, 3, 4)},
		Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0"}},
	}
	raw := &inferencepb.ModelInferRequest{
		ModelName: "add_sub", ModelVersion: "1", Id: "x",
		Parameters:       typed.Parameters,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "INT32", []int64{2, 2})},
		Outputs:          typed.Outputs,
		RawInputContents: [][]byte{le32(1, 2, 3, 4)},
	}
	want := &InferRequest{
		Model: "add_sub", Version: "1", ID: "x",
		Parameters: Parameters{"b": true, "i": int64(-3), "s": "v", "d": 0.25, "u": uint64(7)},
		Inputs:     []InferInput{{Tensor: mustTensor(t, "INPUT0", tensor.Int32, []int64{2, 2}, []int32{1, 2, 3, 4})}},
		Outputs:    []RequestedOutput{{Name: "OUTPUT0"}},
	}
	for _, c := range []struct {
		name    string
		pb      *inferencepb.ModelInferRequest
		wantRaw bool
	}{{"typed", typed, false}, {"raw", raw, true}} {
		got, usedRaw, err := FromProtoRequest(c.pb, Limits{MaxElements: 4})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if usedRaw != c.wantRaw {
			t.Errorf("%s: usedRaw = %v", c.name, usedRaw)
		}
		if err := requestsEqual(want, got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestFromProtoRequestErrors(t *testing.T) {
	two := []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "INT32", []int64{1}), rawInput("INPUT1", "INT32", []int64{1})}
	cases := []struct {
		name string
		pb   *inferencepb.ModelInferRequest
		lim  Limits
		want error
		msg  string
	}{
		{"nil", nil, Limits{}, ErrInvalid, "nil"},
		{"mixed raw and typed", &inferencepb.ModelInferRequest{
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "INT32", []int64{1}), int32Input("INPUT1", []int64{1}, 5)},
			RawInputContents: [][]byte{le32(1), le32(2)},
		}, Limits{}, ErrInvalid, "raw_input_contents and contents are mutually exclusive"},
		{"raw count short", &inferencepb.ModelInferRequest{Inputs: two, RawInputContents: [][]byte{le32(1)}}, Limits{}, ErrInvalid, "1 raw_input_contents for 2 inputs"},
		{"raw count long", &inferencepb.ModelInferRequest{Inputs: two[:1], RawInputContents: [][]byte{le32(1), le32(2)}}, Limits{}, ErrInvalid, "2 raw_input_contents for 1 inputs"},
		{"raw without inputs", &inferencepb.ModelInferRequest{RawInputContents: [][]byte{le32(1)}}, Limits{}, ErrInvalid, "1 raw_input_contents for 0 inputs"},
		{"raw size 60 for [1,16] INT32", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "INT32", []int64{1, 16})}, RawInputContents: [][]byte{make([]byte, 60)},
		}, Limits{}, ErrInvalid, "60"},
		{"raw size 68 for [1,16] INT32", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "INT32", []int64{1, 16})}, RawInputContents: [][]byte{make([]byte, 68)},
		}, Limits{}, ErrInvalid, "68"},
		{"raw BYTES bad framing", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("INPUT0", "BYTES", []int64{1})}, RawInputContents: [][]byte{{5, 0, 0, 0, 'a'}},
		}, Limits{}, ErrInvalid, "INPUT0"},
		{"FP16 in typed contents", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "h", Datatype: "FP16", Shape: []int64{1}, Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1}}}},
		}, Limits{}, ErrInvalid, "must use raw_input_contents"},
		{"BF16 without contents", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "h", Datatype: "BF16", Shape: []int64{1}}},
		}, Limits{}, ErrInvalid, "must use raw_input_contents"},
		{"INT32 in fp32_contents", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "a", Datatype: "INT32", Shape: []int64{1}, Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1}}}},
		}, Limits{}, ErrInvalid, `input "a"`},
		{"typed count short", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{1, 16}, make([]int32, 15)...)},
		}, Limits{}, ErrInvalid, `input "a"`},
		{"typed count long", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{1, 16}, make([]int32, 17)...)},
		}, Limits{}, ErrInvalid, `input "a"`},
		{"no contents", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("a", "INT32", []int64{2})},
		}, Limits{}, ErrInvalid, `input "a"`},
		{"huge shape, 3 values", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{1000000000}, 1, 2, 3)},
		}, Limits{}, ErrInvalid, "1000000000"},
		{"shape overflow", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{1 << 32, 1 << 32}, 1)},
		}, Limits{}, ErrInvalid, "overflow"},
		{"shape overflow raw", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("a", "INT32", []int64{math.MaxInt64, 2})}, RawInputContents: [][]byte{le32(1)},
		}, Limits{}, ErrInvalid, "overflow"},
		{"negative dimension", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{-1, 16}, 1)},
		}, Limits{}, ErrInvalid, "-1"},
		{"unknown datatype", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "a", Datatype: "FLOAT32", Shape: []int64{1}}},
		}, Limits{}, ErrInvalid, "FLOAT32"},
		{"lower-case datatype", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "a", Datatype: "int32", Shape: []int64{1}}},
		}, Limits{}, ErrInvalid, "int32"},
		{"missing input name", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("", []int64{1}, 1)},
		}, Limits{}, ErrInvalid, "input 0: missing name"},
		{"nil input", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{nil},
		}, Limits{}, ErrInvalid, "input 0"},
		{"missing output name", &inferencepb.ModelInferRequest{
			Inputs:  []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{1}, 1)},
			Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{}},
		}, Limits{}, ErrInvalid, "output 0: missing name"},
		{"element limit typed", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("a", []int64{2, 3}, 1, 2, 3, 4, 5, 6)},
		}, Limits{MaxElements: 5}, ErrTooLarge, "limit"},
		{"element limit raw", &inferencepb.ModelInferRequest{
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{rawInput("a", "INT32", []int64{6})}, RawInputContents: [][]byte{make([]byte, 24)},
		}, Limits{MaxElements: 5}, ErrTooLarge, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _, err := FromProtoRequest(c.pb, c.lim)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (%+v), want an error wrapping %v", err, req, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestFromProtoResponse(t *testing.T) {
	out := func(name string, c *inferencepb.InferTensorContents) *inferencepb.ModelInferResponse_InferOutputTensor {
		return &inferencepb.ModelInferResponse_InferOutputTensor{Name: name, Datatype: "INT32", Shape: []int64{2}, Contents: c}
	}
	want := &InferResponse{Model: "m", Outputs: []InferOutput{
		{Tensor: mustTensor(t, "A", tensor.Int32, []int64{2}, []int32{1, 2})},
		{Tensor: mustTensor(t, "B", tensor.Int32, []int64{2}, []int32{3, 4})},
	}}
	for _, c := range []struct {
		name string
		pb   *inferencepb.ModelInferResponse
		ok   bool
	}{
		{"typed", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
			out("A", &inferencepb.InferTensorContents{IntContents: []int32{1, 2}}), out("B", &inferencepb.InferTensorContents{IntContents: []int32{3, 4}}),
		}}, true},
		{"raw", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{out("A", nil), out("B", nil)},
			RawOutputContents: [][]byte{le32(1, 2), le32(3, 4)}}, true},
		// MLServer 1.7.1: an empty contents message beside every raw output.
		{"raw with empty contents", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
			out("A", &inferencepb.InferTensorContents{}), out("B", &inferencepb.InferTensorContents{}),
		}, RawOutputContents: [][]byte{le32(1, 2), le32(3, 4)}}, true},
		{"both", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
			out("A", nil), out("B", &inferencepb.InferTensorContents{IntContents: []int32{3, 4}}),
		}, RawOutputContents: [][]byte{le32(1, 2), le32(3, 4)}}, false},
		{"raw count", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{out("A", nil), out("B", nil)},
			RawOutputContents: [][]byte{le32(1, 2)}}, false},
		{"raw size", &inferencepb.ModelInferResponse{ModelName: "m", Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{out("A", nil), out("B", nil)},
			RawOutputContents: [][]byte{le32(1, 2), le32(3)}}, false},
		{"typed FP16", &inferencepb.ModelInferResponse{Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
			{Name: "h", Datatype: "FP16", Shape: []int64{1}, Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1}}}}}, false},
		{"unknown datatype", &inferencepb.ModelInferResponse{Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
			{Name: "o", Datatype: "X", Shape: []int64{0}}}}, false},
		{"nil", nil, false},
	} {
		got, err := FromProtoResponse(c.pb)
		if !c.ok {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: got %v, want ErrInvalid", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := responsesEqual(want, got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestParametersProto(t *testing.T) {
	in := Parameters{
		"b": true, "i": int64(-1), "int": 7, "u": uint64(math.MaxUint64), "u_small": uint64(3),
		"f": 0.5, "f32": float32(0.25), "nan": math.NaN(), "s": "é", "": "empty key",
	}
	m, err := ParametersToProto(in)
	if err != nil {
		t.Fatal(err)
	}
	wantChoice := map[string]any{
		"b":       &inferencepb.InferParameter_BoolParam{BoolParam: true},
		"i":       &inferencepb.InferParameter_Int64Param{Int64Param: -1},
		"int":     &inferencepb.InferParameter_Int64Param{Int64Param: 7},
		"u":       &inferencepb.InferParameter_Uint64Param{Uint64Param: math.MaxUint64},
		"u_small": &inferencepb.InferParameter_Uint64Param{Uint64Param: 3},
		"f":       &inferencepb.InferParameter_DoubleParam{DoubleParam: 0.5},
		"f32":     &inferencepb.InferParameter_DoubleParam{DoubleParam: 0.25},
		"s":       &inferencepb.InferParameter_StringParam{StringParam: "é"},
		"":        &inferencepb.InferParameter_StringParam{StringParam: "empty key"},
	}
	for k, w := range wantChoice {
		if got := m[k].GetParameterChoice(); !reflect.DeepEqual(got, w) {
			t.Errorf("%q: got %#v, want %#v", k, got, w)
		}
	}
	if !math.IsNaN(m["nan"].GetDoubleParam()) {
		t.Errorf("nan: got %v", m["nan"])
	}
	back := ParametersFromProto(m)
	want := Parameters{
		"b": true, "i": int64(-1), "int": int64(7), "u": uint64(math.MaxUint64), "u_small": uint64(3),
		"f": 0.5, "f32": 0.25, "nan": math.NaN(), "s": "é", "": "empty key",
	}
	if err := paramsEqual(want, back); err != nil {
		t.Error(err)
	}

	for _, bad := range []any{nil, []any{1}, map[string]any{}, int32(1), uint(1), []byte("x")} {
		_, err := ParametersToProto(Parameters{"ok": true, "bad key": bad})
		if err == nil || !strings.Contains(err.Error(), `"bad key"`) {
			t.Errorf("%T: got %v, want an error naming the key", bad, err)
		}
	}
	if m, err := ParametersToProto(nil); m != nil || err != nil {
		t.Errorf("nil: %v, %v", m, err)
	}
	if p := ParametersFromProto(map[string]*inferencepb.InferParameter{"x": {}}); p != nil {
		t.Errorf("unset values: got %v, want nil", p)
	}
}

func TestMetadataProto(t *testing.T) {
	sm := &ServerMetadata{Name: "oipkit", Version: "1.2", Extensions: []string{"binary_tensor_data", "parameters"}}
	if got := ServerMetadataFromProto(ServerMetadataToProto(sm)); !reflect.DeepEqual(got, sm) {
		t.Errorf("server metadata: %+v != %+v", got, sm)
	}
	empty := ServerMetadataFromProto(&inferencepb.ServerMetadataResponse{Name: "n"})
	if empty.Extensions == nil {
		t.Error("Extensions is nil; it must encode as a JSON array")
	}

	mm := &ModelMetadata{
		Name: "add_sub", Versions: []string{"1", "2"}, Platform: "oipkit_native",
		Inputs:     []TensorMetadata{{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{-1, 16}}, {Name: "S", Datatype: tensor.Bytes, Shape: []int64{}}},
		Outputs:    []TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.FP16, Shape: []int64{1}}},
		Properties: map[string]string{"k": "v"},
	}
	pb := ModelMetadataToProto(mm)
	if pb.Inputs[0].Datatype != "INT32" || !reflect.DeepEqual(pb.Inputs[0].Shape, []int64{-1, 16}) || pb.Properties["k"] != "v" {
		t.Errorf("proto: %v", pb)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var back inferencepb.ModelMetadataResponse
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	if got := ModelMetadataFromProto(&back); !reflect.DeepEqual(got, mm) {
		t.Errorf("model metadata:\n%+v\n!=\n%+v", got, mm)
	}
	// Metadata may name datatypes the package does not know; they pass
	// through for the caller to judge.
	odd := ModelMetadataFromProto(&inferencepb.ModelMetadataResponse{Inputs: []*inferencepb.ModelMetadataResponse_TensorMetadata{{Name: "x", Datatype: "FLOAT32"}}})
	if odd.Inputs[0].Datatype != "FLOAT32" || odd.Inputs[0].Shape == nil || odd.Outputs == nil {
		t.Errorf("got %+v", odd)
	}
	// The caller's metadata is not shared with the message.
	pb.Inputs[0].Shape[0] = 99
	if mm.Inputs[0].Shape[0] != -1 {
		t.Error("ModelMetadataToProto shares the shape slice")
	}
}

// FP16/BF16 force raw contents for the whole request and response; the
// typed form is used otherwise.
func TestProtoFormSelection(t *testing.T) {
	for _, d := range tensor.Datatypes {
		req := &InferRequest{Inputs: []InferInput{
			{Tensor: sampleTensor(t, "a", tensor.Int32, []int64{2}, false)},
			{Tensor: sampleTensor(t, "b", d, []int64{2}, false)},
		}}
		pb, err := ToProtoRequest(req, false)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if forced := d == tensor.FP16 || d == tensor.BF16; (len(pb.RawInputContents) == 2) != forced {
			t.Errorf("%s: %d raw entries", d, len(pb.RawInputContents))
		}
		for _, in := range pb.Inputs {
			if (in.Contents == nil) != (len(pb.RawInputContents) == 2) {
				t.Errorf("%s: input %q contents %v with %d raw entries", d, in.Name, in.Contents, len(pb.RawInputContents))
			}
		}
		resp := &InferResponse{Outputs: []InferOutput{{Tensor: req.Inputs[0].Tensor}, {Tensor: req.Inputs[1].Tensor}}}
		rpb, err := ToProtoResponse(resp, false)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if forced := d == tensor.FP16 || d == tensor.BF16; (len(rpb.RawOutputContents) == 2) != forced {
			t.Errorf("%s: %d raw output entries", d, len(rpb.RawOutputContents))
		}
	}
}
