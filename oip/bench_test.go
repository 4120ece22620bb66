package oip

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// benchRequest has one 1 MiB FP32 input of values in [-1, 1).
func benchRequest(b *testing.B) *InferRequest {
	const n = 1 << 20 / 4
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]float32, n)
	for i := range data {
		data[i] = r.Float32()*2 - 1
	}
	t, err := tensor.New("INPUT0", tensor.FP32, []int64{1, n}, data)
	if err != nil {
		b.Fatal(err)
	}
	return &InferRequest{ID: "bench", Inputs: []InferInput{{Tensor: t}}}
}

func benchEncode(b *testing.B, enc RESTEncoding) {
	req := benchRequest(b)
	body, _, err := EncodeRESTRequest(req, enc)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := EncodeRESTRequest(req, enc); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecode(b *testing.B, enc RESTEncoding) {
	body, hl, err := EncodeRESTRequest(benchRequest(b), enc)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRESTRequest(body, hl, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRESTDecodeJSON(b *testing.B)   { benchDecode(b, RESTEncoding{}) }
func BenchmarkRESTEncodeJSON(b *testing.B)   { benchEncode(b, RESTEncoding{}) }
func BenchmarkRESTDecodeBinary(b *testing.B) { benchDecode(b, RESTEncoding{BinaryInputs: true}) }
func BenchmarkRESTEncodeBinary(b *testing.B) { benchEncode(b, RESTEncoding{BinaryInputs: true}) }

func BenchmarkGRPCRawFromProto(b *testing.B) {
	pb, err := ToProtoRequest(benchRequest(b), true)
	if err != nil {
		b.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		b.Fatal(err)
	}
	var msg inferencepb.ModelInferRequest
	if err := proto.Unmarshal(wire, &msg); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := FromProtoRequest(&msg, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGRPCRawToProto(b *testing.B) {
	req := benchRequest(b)
	pb, err := ToProtoRequest(req, true)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(proto.Size(pb)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToProtoRequest(req, true); err != nil {
			b.Fatal(err)
		}
	}
}

// The two benchmarks below are the codec targets of scripts/bench-compare.sh:
// each compares oipkit's REST request decode of a 1 MiB FP32 tensor with an
// anchor measured in the same run.

// BenchmarkRESTJSONDecodeFP32_1MiB: DecodeRESTRequest of a JSON body against
// encoding/json decoding the same data array into []float32. Both report MB/s
// of the data array's JSON text, so their ratio is the ratio of their times.
func BenchmarkRESTJSONDecodeFP32_1MiB(b *testing.B) {
	req := benchRequest(b)
	body, hl, err := EncodeRESTRequest(req, RESTEncoding{})
	if err != nil {
		b.Fatal(err)
	}
	array, err := tensor.AppendJSONData(nil, req.Inputs[0].Tensor)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("oipkit", func(b *testing.B) {
		b.SetBytes(int64(len(array)))
		b.ReportAllocs()
		for b.Loop() {
			req, err := DecodeRESTRequest(body, hl, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			sinkRequest = req
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(array)))
		b.ReportAllocs()
		for b.Loop() {
			var v []float32
			if err := json.Unmarshal(array, &v); err != nil {
				b.Fatal(err)
			}
			sinkFloats = v
		}
	})
}

// BenchmarkRESTBinaryDecodeFP32_1MiB: DecodeRESTRequest of a binary-extension
// body against a plain copy of the same bytes into a new buffer.
func BenchmarkRESTBinaryDecodeFP32_1MiB(b *testing.B) {
	body, hl, err := EncodeRESTRequest(benchRequest(b), RESTEncoding{BinaryInputs: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("oipkit", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			req, err := DecodeRESTRequest(body, hl, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			sinkRequest = req // kept alive like the copy, for the same GC pacing
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			sink = bytes.Clone(body)
		}
	})
}

// sink and sinkRequest keep benchmark results alive.
var (
	sink        []byte
	sinkRequest *InferRequest
	sinkFloats  []float32
)

// addSubRequest is the add_sub request of scripts/bench-compare.sh: two INT32
// [1,16] inputs, the size of request the servers' hot paths are tuned for.
func addSubRequest(b *testing.B) *InferRequest {
	x, y := make([]int32, 16), make([]int32, 16)
	for i := range x {
		x[i], y[i] = int32(i+1), int32(i+101)
	}
	in := func(name string, v []int32) InferInput {
		t, err := tensor.New(name, tensor.Int32, []int64{1, 16}, v)
		if err != nil {
			b.Fatal(err)
		}
		return InferInput{Tensor: t}
	}
	return &InferRequest{Inputs: []InferInput{in("INPUT0", x), in("INPUT1", y)}}
}

func benchDecodeAddSub(b *testing.B, enc RESTEncoding) {
	body, hl, err := EncodeRESTRequest(addSubRequest(b), enc)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRESTRequest(body, hl, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRESTDecodeAddSub decodes the add_sub request as the reference
// server receives it from oipkit load --protocol http and http-binary.
func BenchmarkRESTDecodeAddSub(b *testing.B) {
	b.Run("json", func(b *testing.B) { benchDecodeAddSub(b, RESTEncoding{}) })
	b.Run("binary", func(b *testing.B) { benchDecodeAddSub(b, RESTEncoding{BinaryInputs: true, BinaryOutputs: true}) })
}
