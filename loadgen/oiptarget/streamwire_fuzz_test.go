package oiptarget

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// FuzzStreamMessageScan reads arbitrary bytes with the hot path's
// hand-written field reader, in both stream shapes, and with
// proto.Unmarshal into the generated types: whatever protobuf decodes, scan
// must read too, to the same error message, id, triton_final_response and
// presence of outputs; whatever scan refuses, protobuf must refuse. It must
// never panic or allocate.
func FuzzStreamMessageScan(f *testing.F) {
	final := func(v bool) *inferencepb.InferParameter {
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: v}}
	}
	for _, m := range []*inferencepb.ModelStreamInferResponse{
		{InferResponse: &inferencepb.ModelInferResponse{ModelName: "tokens", Id: "17",
			Parameters: map[string]*inferencepb.InferParameter{
				"other":                      {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "x"}},
				oip.ParamTritonFinalResponse: final(true),
			},
			Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}}}}},
		{ErrorMessage: "boom", InferResponse: &inferencepb.ModelInferResponse{Id: "3",
			Parameters: map[string]*inferencepb.InferParameter{oip.ParamTritonFinalResponse: final(false)}}},
		{InferResponse: &inferencepb.ModelInferResponse{Id: "9", RawOutputContents: [][]byte{{1, 0, 0, 0}},
			Parameters: map[string]*inferencepb.InferParameter{oip.ParamTritonFinalResponse: {
				ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 1}}}}},
		{},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Encodings protobuf allows and a marshaller does not produce: a map
	// entry given twice, an entry whose value comes before its key, a
	// value whose oneof is set twice, a non-minimal varint.
	entry := func(key string, value []byte) []byte {
		var e []byte
		e = protowire.AppendTag(e, fieldMapValue, protowire.BytesType)
		e = protowire.AppendBytes(e, value)
		e = protowire.AppendTag(e, fieldMapKey, protowire.BytesType)
		return protowire.AppendString(e, key)
	}
	boolValue := []byte{0x08, 0x81, 0x00}
	var resp []byte
	resp = protowire.AppendTag(resp, fieldResponseParameters, protowire.BytesType)
	resp = protowire.AppendBytes(resp, entry(oip.ParamTritonFinalResponse, boolValue))
	resp = protowire.AppendTag(resp, fieldResponseParameters, protowire.BytesType)
	resp = protowire.AppendBytes(resp, entry(oip.ParamTritonFinalResponse, append([]byte{0x10, 0x01}, boolValue...)))
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, fieldStreamInferResponse, protowire.BytesType), resp))
	// A later entry of the key replaces the earlier one whole, and a later
	// member of the oneof replaces bool_param.
	resp = resp[:0]
	resp = protowire.AppendTag(resp, fieldResponseParameters, protowire.BytesType)
	resp = protowire.AppendBytes(resp, entry(oip.ParamTritonFinalResponse, boolValue))
	resp = protowire.AppendTag(resp, fieldResponseParameters, protowire.BytesType)
	resp = protowire.AppendBytes(resp, entry(oip.ParamTritonFinalResponse, append(bytes.Clone(boolValue), 0x10, 0x01)))
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, fieldStreamInferResponse, protowire.BytesType), resp))
	f.Add([]byte{0x12, 0x05, 0x1a})

	f.Fuzz(func(t *testing.T, b []byte) {
		var m streamMessage
		for _, mlserver := range []bool{false, true} {
			var err error
			var want *inferencepb.ModelStreamInferResponse
			var perr error
			if mlserver {
				err = m.scanResponse(b)
				ir := &inferencepb.ModelInferResponse{}
				perr = proto.Unmarshal(b, ir)
				want = &inferencepb.ModelStreamInferResponse{InferResponse: ir}
			} else {
				err = m.scan(b)
				want = &inferencepb.ModelStreamInferResponse{}
				perr = proto.Unmarshal(b, want)
			}
			if perr != nil {
				continue // scan reads less than protobuf does: it may accept more
			}
			if err != nil {
				t.Fatalf("mlserver %v: scan refuses %x (%v), protobuf decodes %v", mlserver, b, err, want)
			}
			ir := want.GetInferResponse()
			p, known := ir.GetParameters()[oip.ParamTritonFinalResponse].GetParameterChoice().(*inferencepb.InferParameter_BoolParam)
			if string(m.errMsg) != want.GetErrorMessage() || string(m.id) != ir.GetId() ||
				m.finalKnown != known || known && m.final != p.BoolParam ||
				m.outputs != (len(ir.GetOutputs()) > 0 || len(ir.GetRawOutputContents()) > 0) {
				t.Fatalf("mlserver %v: %x: scan read error %q id %q final %v (known %v) outputs %v; protobuf %v",
					mlserver, b, m.errMsg, m.id, m.final, m.finalKnown, m.outputs, want)
			}
		}
		// A refusal allocates its error; a reading must not allocate.
		if m.scan(b) != nil {
			return
		}
		if a := testing.AllocsPerRun(1, func() { _ = m.scan(b) }); a != 0 {
			t.Fatalf("scan allocates %v times reading %x", a, b)
		}
	})
}
