package client

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// PreparedGRPCInfer is one ModelInfer request serialized once and sent many
// times: the load generator's gRPC hot path. Over plaintext it goes through
// the client's lean HTTP/2 transport (h2c.go), framed once; with TLS (or
// with the lean transport switched off, EnvLeanGRPC) through grpc-go, with
// a codec that writes the bytes as they are.
//
// A PreparedGRPCInfer is safe for concurrent use.
type PreparedGRPCInfer struct {
	c    *GRPC
	wire []byte // plaintext: the gRPC-framed message
	msg  PreEncoded
}

// PrepareInfer prepares msg, a marshalled inference.ModelInferRequest, to
// be sent by Send. msg must not be modified afterwards.
func (c *GRPC) PrepareInfer(msg []byte) (*PreparedGRPCInfer, error) {
	p := &PreparedGRPCInfer{c: c, msg: PreEncoded{Buf: mem.BufferSlice{mem.SliceBuffer(msg)}}}
	if c.opts.TLS != nil || !leanGRPC {
		return p, nil
	}
	if _, err := c.lean(); err != nil {
		return nil, &Error{Op: "Infer", Err: err}
	}
	if int64(len(msg)) > 1<<32-1 {
		return nil, &Error{Op: "Infer", Err: fmt.Errorf("request message of %d bytes exceeds gRPC's 4 GiB", len(msg))}
	}
	p.wire = make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(p.wire[1:], uint32(len(msg)))
	copy(p.wire[5:], msg)
	return p, nil
}

// Message is the request message as prepared (not to be modified): the
// base that sequences and streams add their parameters to.
func (p *PreparedGRPCInfer) Message() []byte { return p.msg.Buf[0].ReadOnlyData() }

// Send makes the call and returns the response message (a marshalled
// inference.ModelInferResponse) when keep; otherwise its bytes are checked
// and dropped. A failed call is an *Error with the gRPC code and message
// (status.FromError works on it); DEADLINE_EXCEEDED also wraps
// context.DeadlineExceeded, and a message beyond Options.MaxMessageBytes
// is RESOURCE_EXHAUSTED.
func (p *PreparedGRPCInfer) Send(ctx context.Context, keep bool) ([]byte, error) {
	if p.wire != nil {
		return p.c.h2.call(ctx, p.wire, keep)
	}
	ctx, cancel := p.c.Context(ctx)
	defer cancel()
	var reply any = DiscardReply
	var raw RawMessage
	if keep {
		reply = &raw
	}
	err := p.c.Conn().Invoke(ctx, inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, &p.msg, reply, grpc.ForceCodecV2(PreEncodedCodec{}))
	if err != nil {
		return nil, callError(ctx, "Infer", err)
	}
	if keep {
		if err := checkKeptAnswer("Infer", raw.B, p.c.opts.MaxMessageBytes); err != nil {
			return nil, err
		}
	}
	return raw.B, nil
}

// lean returns the client's lean transport, made on first use (only the
// load generator's data client needs it).
func (c *GRPC) lean() (*h2cClient, error) {
	c.h2once.Do(func() { c.h2, c.h2err = newH2C(c.addr, c.opts, c.md) })
	return c.h2, c.h2err
}

// PreEncoded is a gRPC request message serialized once, before it is sent
// (PreEncodedCodec writes it as it is).
type PreEncoded struct {
	Buf mem.BufferSlice
}

// NewPreEncoded wraps b, which must not be modified while it is in use.
func NewPreEncoded(b []byte) *PreEncoded {
	return &PreEncoded{Buf: mem.BufferSlice{mem.SliceBuffer(b)}}
}

// RawMessage receives a gRPC message's bytes into a reused buffer.
type RawMessage struct{ B []byte }

// DiscardReply is the reply of calls whose response is not kept: the codec
// skips it. It is never written, so sharing it is safe.
var DiscardReply = new(discard)

type discard struct{}

// PreEncodedCodec, forced per call with grpc.ForceCodecV2, writes a
// *PreEncoded request as it is (no protobuf marshalling per request),
// copies a response into a *RawMessage and drops it unread for
// DiscardReply. Other messages go through protobuf, so it is a drop-in for
// the default codec (whose name it takes, so the content-type stays
// application/grpc+proto). A SliceBuffer's Free is a no-op, so gRPC freeing
// the buffer after the write leaves the payload intact.
type PreEncodedCodec struct{}

func (PreEncodedCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *PreEncoded:
		return m.Buf, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return nil, fmt.Errorf("pre-encoded codec: cannot marshal %T", v)
}

func (PreEncodedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *discard:
		return nil
	case *RawMessage:
		// Copied (grpc-go recycles data) into the message's buffer, reused
		// across calls; gRPC's receive limit bounds its size.
		m.B = m.B[:0]
		for _, buf := range data {
			m.B = append(m.B, buf.ReadOnlyData()...)
		}
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), m)
	}
	return fmt.Errorf("pre-encoded codec: cannot unmarshal into %T", v)
}

func (PreEncodedCodec) Name() string { return "proto" }
