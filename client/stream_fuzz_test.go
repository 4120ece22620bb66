package client

import (
	"errors"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// FuzzDecodeStreamResponse decodes arbitrary bytes as a
// ModelStreamInferResponse with protobuf and then with
// DecodeStreamResponse, whose id, triton_final_response, error and
// response must be what the message says. It must never panic, nor
// allocate for the sizes the message claims (a shape of 2^40 elements over
// four bytes of raw contents): its allocations are bounded by the input's
// size.
func FuzzDecodeStreamResponse(f *testing.F) {
	final := &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}}
	for _, m := range []*inferencepb.ModelStreamInferResponse{
		{InferResponse: &inferencepb.ModelInferResponse{ModelName: "tokens", ModelVersion: "1", Id: "17",
			Parameters: map[string]*inferencepb.InferParameter{oip.ParamTritonFinalResponse: final},
			Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{2},
				Contents: &inferencepb.InferTensorContents{IntContents: []int32{1, 2}}}}}},
		{InferResponse: &inferencepb.ModelInferResponse{Id: "9",
			Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUT", Datatype: "FP32", Shape: []int64{1 << 40}}},
			RawOutputContents: [][]byte{{0, 0, 128, 63}}}},
		{InferResponse: &inferencepb.ModelInferResponse{
			Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "S", Datatype: "BYTES", Shape: []int64{1 << 30}}},
			RawOutputContents: [][]byte{{255, 255, 255, 255}}}},
		{ErrorMessage: "model failed", InferResponse: &inferencepb.ModelInferResponse{Id: "3"}},
		{},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &inferencepb.ModelStreamInferResponse{}
		if proto.Unmarshal(b, m) != nil {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := DecodeStreamResponse(m)
		runtime.ReadMemStats(&after)
		// Room for the decoded values' own structures (maps, slices,
		// headers), never for a claimed size.
		if a := after.TotalAlloc - before.TotalAlloc; a > 64*uint64(len(b))+64<<10 {
			t.Fatalf("%x: %d bytes allocated decoding %d", b, a, len(b))
		}
		ir := m.GetInferResponse()
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || m.GetErrorMessage() != "" || ir == nil {
				t.Fatalf("%x: error %v for %v", b, err, m)
			}
			return
		}
		p, known := ir.GetParameters()[oip.ParamTritonFinalResponse].GetParameterChoice().(*inferencepb.InferParameter_BoolParam)
		if r.ID != ir.GetId() || r.FinalKnown != known || known && r.Final != p.BoolParam || !known && r.Final {
			t.Fatalf("%x: id %q final %v (known %v); the message says %v", b, r.ID, r.Final, r.FinalKnown, m)
		}
		if (r.Err != nil) != (m.GetErrorMessage() != "") || r.Err != nil && (r.Err.Message != m.GetErrorMessage() || !errors.Is(r.Err, ErrStreamRequest)) {
			t.Fatalf("%x: error %v; the message says %q", b, r.Err, m.GetErrorMessage())
		}
		if r.Response != nil {
			if r.Response.Model != ir.GetModelName() || r.Response.Version != ir.GetModelVersion() || r.Response.ID != ir.GetId() ||
				len(r.Response.Outputs) != len(ir.GetOutputs()) {
				t.Fatalf("%x: response %+v; the message says %v", b, r.Response, ir)
			}
			for i, o := range r.Response.Outputs {
				if o.Name != ir.GetOutputs()[i].GetName() || string(o.Datatype) != ir.GetOutputs()[i].GetDatatype() {
					t.Fatalf("%x: output %d is %s %s; the message says %v", b, i, o.Name, o.Datatype, ir.GetOutputs()[i])
				}
			}
		} else if ir != nil && m.GetErrorMessage() == "" {
			t.Fatalf("%x: no response from %v", b, ir)
		}
	})
}
