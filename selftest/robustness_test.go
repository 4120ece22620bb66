package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
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

// propertiesCodec is the proto codec, except that the ModelMetadataResponse
// of add_sub gets field 6 appended as map<string, InferParameter> (the
// "parameters" of MLServer's dataplane.proto) instead of OIP-PROTO's
// map<string, string> properties.
type propertiesCodec struct{ param *pb.InferParameter }

func (c propertiesCodec) Name() string { return "proto" }

func (c propertiesCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("propertiesCodec: %T is not a proto message", v)
	}
	b, err := proto.Marshal(m)
	if r, isMeta := v.(*pb.ModelMetadataResponse); err != nil || !isMeta || r.GetName() != "add_sub" {
		return b, err
	}
	value, err := proto.Marshal(c.param)
	if err != nil {
		return nil, err
	}
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "content_type")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, value)
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	return protowire.AppendBytes(b, entry), nil
}

func (c propertiesCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("propertiesCodec: %T is not a proto message", v)
	}
	return proto.Unmarshal(data, m)
}

// closeAfterAnswer answers a request with a 500, as uvicorn does when a
// handler raises, and then closes the connection without having said
// "Connection: close", once the next request has arrived on it: that
// request is reset.
func closeAfterAnswer(w http.ResponseWriter) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	io.WriteString(buf, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\r\nInternal Server Error")
	buf.Flush()
	// Wait for the next request and let all of it arrive, then close with
	// it unread: the client, waiting for the answer, reads a reset.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := buf.Reader.Peek(1); err != nil {
		return
	}
	time.Sleep(50 * time.Millisecond)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

func init() {
	breakages = append(breakages,
		breakage{
			// MLServer 1.7.1: a string parameter of the model settings
			// becomes InferParameter{string_param} in field 6, whose bytes
			// are valid UTF-8 and so decode as a (wrong) properties string.
			name:     "grpc-metadata-field6-is-infer-parameter",
			grpcOpts: []grpc.ServerOption{grpc.ForceServerCodec(propertiesCodec{&pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: "np"}}})},
			failed:   []string{"OIP-GEN-007"},
			warned:   []string{"OIP-GRPC-META-003"},
			answered: true,
		},
		breakage{
			// An int64 parameter is not valid UTF-8 as a string: OIP-PROTO
			// stubs cannot decode the message at all. The suite still
			// reads fields 1-5 (OIP-GRPC-META-003: decode tolerantly).
			name:     "grpc-metadata-field6-undecodable",
			grpcOpts: []grpc.ServerOption{grpc.ForceServerCodec(propertiesCodec{&pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 200}}})},
			failed:   []string{"OIP-GEN-007"},
			warned:   []string{"OIP-GRPC-META-003"},
			answered: true,
		},
		breakage{
			// MLServer 1.7.1 answers a non-Latin-1 request id with 500 and
			// closes the kept-alive connection; the next request, whichever
			// spec sends it, must still be answered.
			name: "rest-500-and-close-for-non-ascii-id",
			rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
				if !isInfer(r) {
					return false
				}
				var m struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(requestBody(r), &m) != nil || isASCII(m.ID) {
					return false
				}
				closeAfterAnswer(w)
				return true
			}},
			failed:   []string{"OIP-REST-INFER-006"},
			blocked:  []string{"OIP-REST-RESP-004"},
			answered: true,
		},
	)
}
