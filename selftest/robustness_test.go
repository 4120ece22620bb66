package selftest

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// garbageMarker makes garbageCodec send bytes that are not a protobuf.
const garbageMarker = "selftest: send garbage"

// garbageCodec is the proto codec, except that a ModelMetadataResponse
// named garbageMarker goes on the wire as bytes no protobuf parser accepts:
// the server says OK, the client cannot read the answer.
type garbageCodec struct{}

func (garbageCodec) Name() string { return "proto" }

func (garbageCodec) Marshal(v any) ([]byte, error) {
	if m, ok := v.(*pb.ModelMetadataResponse); ok && m.GetName() == garbageMarker {
		return []byte{0xff, 0xff, 0xff, 0xff}, nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("garbageCodec: %T is not a proto message", v)
	}
	return proto.Marshal(m)
}

func (garbageCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("garbageCodec: %T is not a proto message", v)
	}
	return proto.Unmarshal(data, m)
}

func init() {
	breakages = append(breakages, breakage{
		// OK plus an unreadable message for an unknown model: the client
		// makes up an INTERNAL status, which is not the server refusing.
		name: "grpc-garbage-ok-for-unknown-model-metadata",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelMetadataRequest); ok && r.Name == "does_not_exist" {
				return &pb.ModelMetadataResponse{Name: garbageMarker}, nil
			}
			return h(ctx, req)
		},
		grpcOpts: []grpc.ServerOption{grpc.ForceServerCodec(garbageCodec{})},
		failed:   []string{"OIP-GRPC-META-004"},
	})
}
