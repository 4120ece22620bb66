package engine

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// metadataWithField6 is add_sub's metadata followed by one field-6 entry
// whose value bytes are given.
func metadataWithField6(t *testing.T, value []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&pb.ModelMetadataResponse{Name: "add_sub", Platform: "p",
		Inputs: []*pb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{-1, 16}}}})
	if err != nil {
		t.Fatal(err)
	}
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "content_type")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, value)
	b = protowire.AppendTag(b, fieldProperties, protowire.BytesType)
	return protowire.AppendBytes(b, entry)
}

func inferParameterBytes(t *testing.T, p *pb.InferParameter) []byte {
	t.Helper()
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeModelMetadataTolerates(t *testing.T) {
	for _, c := range []struct {
		name  string
		value []byte
		wire  string // substring of the wire error; "" for none
	}{
		{"string property", []byte("np"), ""},
		{"InferParameter that is valid UTF-8", inferParameterBytes(t, &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: "np"}}),
			`properties["content_type"] holds bytes 1a026e70, which are the protobuf message InferParameter{"stringParam":"np"}`},
		{"InferParameter that is not UTF-8", inferParameterBytes(t, &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 200}}),
			"does not decode with OIP-PROTO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, wire, err := decodeModelMetadata(metadataWithField6(t, c.value))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if m.GetName() != "add_sub" || len(m.GetInputs()) != 1 || m.GetInputs()[0].GetShape()[1] != 16 {
				t.Errorf("fields 1-5 lost: %v", m)
			}
			switch {
			case c.wire == "" && wire != nil:
				t.Errorf("wire error %v, want none", wire)
			case c.wire != "" && (wire == nil || !strings.Contains(wire.Error(), c.wire)):
				t.Errorf("wire error %v, want one containing %q", wire, c.wire)
			}
		})
	}
	if _, _, err := decodeModelMetadata([]byte{0xff, 0xff, 0xff, 0xff}); err == nil {
		t.Error("garbage decoded")
	}
}
