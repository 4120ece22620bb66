package loadgen

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// preEncoded is a gRPC request message serialized once, before the run.
type preEncoded struct {
	buf mem.BufferSlice
}

func newPreEncoded(b []byte) *preEncoded {
	return &preEncoded{buf: mem.BufferSlice{mem.SliceBuffer(b)}}
}

// discardReply is the reply of calls whose response is not inspected: the
// codec skips decoding it. It is never written, so sharing it is safe.
var discardReply = new(discard)

type discard struct{}

// preEncodedCodec is the gRPC codec of the load generator's hot path,
// forced per call with grpc.ForceCodecV2. It writes a *preEncoded request
// as is — no protobuf marshalling per request — and drops the response
// bytes unread when the reply is discardReply. Other messages go through
// protobuf, so it is a drop-in for the default codec (whose name it takes,
// so the content-type stays application/grpc+proto).
//
// A SliceBuffer's Free is a no-op, so gRPC freeing the returned buffer
// after the write leaves the payload intact for the next request.
type preEncodedCodec struct{}

func (preEncodedCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *preEncoded:
		return m.buf, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return nil, fmt.Errorf("pre-encoded codec: cannot marshal %T", v)
}

func (preEncodedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *discard:
		return nil
	case *rawMessage:
		// Copied into a buffer the stream reuses (grpc-go recycles data);
		// gRPC's receive limit bounds its size.
		m.b = m.b[:0]
		for _, buf := range data {
			m.b = append(m.b, buf.ReadOnlyData()...)
		}
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), m)
	}
	return fmt.Errorf("pre-encoded codec: cannot unmarshal into %T", v)
}

func (preEncodedCodec) Name() string { return "proto" }
