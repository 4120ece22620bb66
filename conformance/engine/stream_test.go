package engine

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

func TestDecodeStreamMessageReadings(t *testing.T) {
	resp := &pb.ModelInferResponse{ModelName: "stream_count", ModelVersion: "1", Id: "a",
		Outputs: []*pb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1},
			Contents: &pb.InferTensorContents{IntContents: []int32{1}}}}}
	triton, _ := proto.Marshal(&pb.ModelStreamInferResponse{InferResponse: resp})
	failed, _ := proto.Marshal(&pb.ModelStreamInferResponse{ErrorMessage: "unknown model", InferResponse: &pb.ModelInferResponse{Id: "b"}})
	mlserver, _ := proto.Marshal(resp)
	for _, c := range []struct {
		name  string
		b     []byte
		shape StreamShape
		id    string
		err   string
	}{
		{"triton", triton, ShapeTriton, "a", ""},
		{"triton error", failed, ShapeTriton, "b", "unknown model"},
		{"mlserver", mlserver, ShapeMLServer, "a", ""},
	} {
		m := decodeStreamMessage(c.b)
		if m.Shape != c.shape || m.Resp.GetId() != c.id || m.Error != c.err || m.DecodeErr != nil {
			t.Errorf("%s: %+v", c.name, m)
		}
	}
	if m := decodeStreamMessage([]byte{0xff, 0xff, 0xff}); m.DecodeErr == nil || m.Shape != "" {
		t.Errorf("garbage decoded: %+v", m)
	}
}
