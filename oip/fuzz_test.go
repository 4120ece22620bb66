package oip

import (
	"math"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// jsonExact reports whether REST JSON carries t bit for bit: NaN payloads
// collapse to one NaN and invalid UTF-8 becomes U+FFFD.
func jsonExact(t tensor.Tensor) bool {
	switch v := t.Data.(type) {
	case []float32:
		for _, e := range v {
			if e != e {
				return false
			}
		}
	case []float64:
		for _, e := range v {
			if math.IsNaN(e) {
				return false
			}
		}
	case []tensor.Float16:
		for _, e := range v {
			if e&0x7c00 == 0x7c00 && e&0x3ff != 0 {
				return false
			}
		}
	case []tensor.BFloat16:
		for _, e := range v {
			if e&0x7f80 == 0x7f80 && e&0x7f != 0 {
				return false
			}
		}
	case [][]byte:
		for _, e := range v {
			if !utf8.Valid(e) {
				return false
			}
		}
	}
	return true
}

// encodable reports whether every parameter of req has a kind the encoders
// write (the decoder keeps other JSON values so a server can reject them).
func encodable(req *InferRequest) bool {
	if req.Parameters.Validate() != nil {
		return false
	}
	for _, in := range req.Inputs {
		if in.Parameters.Validate() != nil {
			return false
		}
	}
	for _, o := range req.Outputs {
		if o.Parameters.Validate() != nil {
			return false
		}
	}
	return true
}

func FuzzDecodeRESTRequest(f *testing.F) {
	req := &InferRequest{
		ID:         "fuzz-é",
		Parameters: Parameters{"b": true, "i": int64(-1), "u": uint64(math.MaxUint64), "f": 1.5, "s": "x"},
		Inputs: []InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{2, 2}, Data: []int32{1, 2, 3, 4}}, Parameters: Parameters{"p": "q"}},
			{Tensor: tensor.Tensor{Name: "S", Datatype: tensor.Bytes, Shape: []int64{2}, Data: [][]byte{[]byte("a"), []byte("bcd")}}},
			{Tensor: tensor.Tensor{Name: "H", Datatype: tensor.FP16, Shape: []int64{1}, Data: []tensor.Float16{0x3c00}}},
			{Tensor: tensor.Tensor{Name: "B", Datatype: tensor.Bool, Shape: []int64{3}, Data: []bool{true, false, true}}},
		},
		Outputs: []RequestedOutput{{Name: "OUTPUT0", Parameters: Parameters{ParamBinaryData: true}}},
	}
	jsonBody, _, err := EncodeRESTRequest(req, RESTEncoding{})
	if err != nil {
		f.Fatal(err)
	}
	binBody, hl, err := EncodeRESTRequest(req, RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		f.Fatal(err)
	}
	mixed, mhl, err := encodeRESTRequest(req, func(i int) bool { return i%2 == 0 }, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(jsonBody, -1)
	f.Add(binBody, hl)
	f.Add(mixed, mhl)
	f.Add(jsonBody[:len(jsonBody)/2], -1) // truncated JSON
	f.Add(binBody[:len(binBody)-1], hl)   // truncated tail
	f.Add(binBody, hl+1)                  // header length off by one
	f.Add(binBody, len(binBody)+1)        // beyond the body
	f.Add(binBody, 0)                     // raw binary request
	f.Add(binBody, -7)
	f.Add(binBody, -1) // binary without the header
	f.Add([]byte(`{"inputs":[{"name":"a","shape":[2,2],"datatype":"FP64","data":[[1.5,"NaN"],["Infinity",-0.0]]}]}`), -1)
	f.Add([]byte(`{"inputs":[{"name":"a","shape":[1000000000],"datatype":"INT8","data":[1,2,3]}]}`), -1)
	f.Add([]byte(`{"inputs":[],"parameters":{"x":[1,{"y":null}],"big":1e400}}`), -1)
	f.Add([]byte(``), -1)

	f.Fuzz(func(t *testing.T, body []byte, headerLen int) {
		req, err := DecodeRESTRequest(body, headerLen, Limits{MaxElements: 1 << 20})
		if err != nil {
			return
		}
		if !encodable(req) {
			return
		}
		// Binary re-encoding is exact.
		b2, hl2, err := EncodeRESTRequest(req, RESTEncoding{BinaryInputs: true})
		if err != nil {
			t.Fatalf("binary re-encode: %v", err)
		}
		got, err := DecodeRESTRequest(b2, hl2, Limits{MaxElements: 1 << 20})
		if err != nil {
			t.Fatalf("binary re-decode: %v\n%q", err, b2)
		}
		if err := requestsEqual(req, got); err != nil {
			t.Fatalf("binary round trip: %v", err)
		}
		// JSON re-encoding always works and is exact for what JSON carries.
		j2, jhl, err := EncodeRESTRequest(req, RESTEncoding{})
		if err != nil {
			t.Fatalf("JSON re-encode: %v", err)
		}
		got, err = DecodeRESTRequest(j2, jhl, Limits{MaxElements: 1 << 20})
		if err != nil {
			t.Fatalf("JSON re-decode: %v\n%q", err, j2)
		}
		for _, in := range req.Inputs {
			if !jsonExact(in.Tensor) {
				return
			}
		}
		if err := requestsEqual(req, got); err != nil {
			t.Fatalf("JSON round trip: %v\n%q", err, j2)
		}
	})
}

func FuzzFromProtoRequest(f *testing.F) {
	req := &InferRequest{
		Model: "m", Version: "1", ID: "id",
		Parameters: Parameters{"b": true, "i": int64(-1), "u": uint64(7), "f": 1.5, "s": "x"},
		Inputs: []InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{2, 2}, Data: []int32{1, 2, 3, 4}}, Parameters: Parameters{"p": "q"}},
			{Tensor: tensor.Tensor{Name: "S", Datatype: tensor.Bytes, Shape: []int64{2}, Data: [][]byte{[]byte("a"), []byte("bcd")}}},
			{Tensor: tensor.Tensor{Name: "U8", Datatype: tensor.Uint8, Shape: []int64{2}, Data: []uint8{0, 255}}},
			{Tensor: tensor.Tensor{Name: "F", Datatype: tensor.FP32, Shape: []int64{1}, Data: []float32{0.5}}},
		},
		Outputs: []RequestedOutput{{Name: "OUTPUT0", Parameters: Parameters{"x": int64(1)}}},
	}
	for _, raw := range []bool{false, true} {
		pb, err := ToProtoRequest(req, raw)
		if err != nil {
			f.Fatal(err)
		}
		wire, err := proto.Marshal(pb)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire)
	}
	half := &InferRequest{Inputs: []InferInput{{Tensor: tensor.Tensor{Name: "H", Datatype: tensor.BF16, Shape: []int64{2}, Data: []tensor.BFloat16{1, 2}}}}}
	pb, err := ToProtoRequest(half, false)
	if err != nil {
		f.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(wire)
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		var pb inferencepb.ModelInferRequest
		if err := proto.Unmarshal(data, &pb); err != nil {
			return
		}
		req, usedRaw, err := FromProtoRequest(&pb, Limits{MaxElements: 1 << 20})
		if err != nil {
			return
		}
		// A decoded request converts back to an equal one in the same form.
		pb2, err := ToProtoRequest(req, usedRaw)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		wire, err := proto.Marshal(pb2)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back inferencepb.ModelInferRequest
		if err := proto.Unmarshal(wire, &back); err != nil {
			t.Fatalf("unmarshal: %v", err)
		}
		got, gotRaw, err := FromProtoRequest(&back, Limits{MaxElements: 1 << 20})
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if gotRaw != usedRaw && len(req.Inputs) > 0 {
			t.Fatalf("usedRaw %v, then %v", usedRaw, gotRaw)
		}
		if err := requestsEqual(req, got); err != nil {
			t.Fatal(err)
		}
	})
}
