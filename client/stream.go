package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// ErrStreamRequest is wrapped by the *Error of a StreamResponse whose
// request failed: the server answered it with a non-empty error_message
// and the stream stays usable.
var ErrStreamRequest = errors.New("request failed on the stream")

// StreamShape is the message shape of a server's ModelStreamInfer answers.
// Runtimes disagree (ambiguity A-39): Triton and OpenVINO Model Server
// answer ModelStreamInferResponse{error_message, infer_response}, MLServer
// answers the same RPC with plain ModelInferResponse messages, whose
// model_name (field 1) a Triton-shaped reader takes for an error message.
type StreamShape string

// The shapes.
const (
	// StreamShapeAuto picks the shape from the server's metadata
	// (StreamShapeOf).
	StreamShapeAuto StreamShape = "auto"
	// StreamShapeTriton: ModelStreamInferResponse{error_message,
	// infer_response}; a failed request is an error_message and the stream
	// stays open.
	StreamShapeTriton StreamShape = "triton"
	// StreamShapeMLServer: one ModelInferResponse per message; a failed
	// request ends the stream with a gRPC status.
	StreamShapeMLServer StreamShape = "mlserver"
)

// StreamShapes lists the shapes, auto first.
var StreamShapes = []StreamShape{StreamShapeAuto, StreamShapeTriton, StreamShapeMLServer}

// ParseStreamShape parses a shape name ("" is auto).
func ParseStreamShape(s string) (StreamShape, error) {
	switch sh := StreamShape(s); sh {
	case "":
		return StreamShapeAuto, nil
	case StreamShapeAuto, StreamShapeTriton, StreamShapeMLServer:
		return sh, nil
	}
	return "", fmt.Errorf("stream shape %q: want auto, triton or mlserver", s)
}

// StreamShapeOf is the shape a server with this metadata streams in:
// MLServer's for a server named "mlserver" (its ServerMetadata name),
// Triton's otherwise.
func StreamShapeOf(sm *oip.ServerMetadata) StreamShape {
	if sm != nil && sm.Name == "mlserver" {
		return StreamShapeMLServer
	}
	return StreamShapeTriton
}

// Stream is one gRPC ModelStreamInfer call: requests are ModelInferRequest,
// answers are read in the stream's StreamShape (Triton's
// ModelStreamInferResponse unless chosen otherwise). Responses of different
// requests may interleave; match them by ID. Send and Recv may be called
// from different goroutines (one sender, one receiver).
type Stream struct {
	cs     grpc.ClientStream
	ctx    context.Context
	cancel context.CancelFunc
	raw    bool
	shape  StreamShape // triton or mlserver
	sendMu sync.Mutex
}

// StreamResponse is one message received on a Stream: either a response
// (Err nil) or a per-request error (Err wraps ErrStreamRequest; Response
// holds what the server said about the request, usually its ID).
type StreamResponse struct {
	// ID is the request id echoed by the server ("" when it sent none).
	ID string
	// Response is the inference response; on a per-request error it holds
	// whatever infer_response the server sent with the error, or nil.
	Response *oip.InferResponse
	// Final is the triton_final_response parameter: true on the last
	// response of a request. FinalKnown is false when the server did not
	// send the parameter.
	Final, FinalKnown bool
	// Err is the per-request error (error_message), or nil.
	Err *Error
}

var modelStreamInferDesc = grpc.StreamDesc{StreamName: "ModelStreamInfer", ServerStreams: true, ClientStreams: true}

// Stream opens a ModelStreamInfer stream in Triton's message shape. The
// client's Timeout does not bound it (a stream lives as long as its caller
// wants); ctx does, and Close ends it. The client's metadata is sent.
func (c *GRPC) Stream(ctx context.Context) (*Stream, error) {
	return c.StreamShaped(ctx, StreamShapeTriton)
}

// StreamShaped opens a ModelStreamInfer stream whose answers are read in
// shape; StreamShapeAuto asks the server's metadata first (StreamShapeOf).
func (c *GRPC) StreamShaped(ctx context.Context, shape StreamShape) (*Stream, error) {
	switch shape {
	case StreamShapeTriton, StreamShapeMLServer:
	case StreamShapeAuto, "":
		sm, err := c.ServerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		shape = StreamShapeOf(sm)
	default:
		return nil, &Error{Op: "ModelStreamInfer", Err: fmt.Errorf("unknown stream shape %q", shape)}
	}
	ctx, cancel := context.WithCancel(ctx)
	if len(c.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, c.md...)
	}
	cs, err := c.Conn().NewStream(ctx, &modelStreamInferDesc, inferencepb.GRPCInferenceService_ModelStreamInfer_FullMethodName)
	if err != nil {
		cancel()
		return nil, callError(ctx, "ModelStreamInfer", err)
	}
	return &Stream{cs: cs, ctx: ctx, cancel: cancel, raw: c.raw, shape: shape}, nil
}

// Shape is the message shape the stream reads (never auto).
func (s *Stream) Shape() StreamShape { return s.shape }

// Send sends one request on the stream.
func (s *Stream) Send(req *oip.InferRequest) error {
	const op = "ModelStreamInfer send"
	if req == nil {
		return &Error{Op: op, Err: errors.New("nil request")}
	}
	pb, err := oip.ToProtoRequest(req, s.raw)
	if err != nil {
		return &Error{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	pb.ModelName, pb.ModelVersion, pb.Id = req.Model, req.Version, req.ID
	return s.SendProto(pb)
}

// SendProto sends a hand-built request on the stream.
func (s *Stream) SendProto(pb *inferencepb.ModelInferRequest) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.cs.SendMsg(pb); err != nil {
		if err == io.EOF { // the stream ended; Recv has the status
			_, err = s.RecvProto()
			for err == nil {
				_, err = s.RecvProto()
			}
			if err == io.EOF {
				return &Error{Op: "ModelStreamInfer send", Err: errors.New("the server ended the stream")}
			}
		}
		return callError(s.ctx, "ModelStreamInfer send", err)
	}
	return nil
}

// CloseSend half-closes the stream: the server answers the requests it has
// and then ends the stream, which Recv reports as io.EOF.
func (s *Stream) CloseSend() error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.cs.CloseSend(); err != nil {
		return callError(s.ctx, "ModelStreamInfer close", err)
	}
	return nil
}

// Recv returns the next message. It returns io.EOF when the server ended
// the stream with OK, and a *Error for a non-OK end or a message that does
// not decode. In MLServer's shape a message is always a response (Final
// unknown): MLServer ends the stream with a status instead of sending an
// error_message.
func (s *Stream) Recv() (*StreamResponse, error) {
	m, err := s.RecvProto()
	if err != nil {
		return nil, err
	}
	return DecodeStreamResponse(m)
}

// RecvProto returns the next message undecoded (io.EOF at a clean end). A
// message of MLServer's shape comes back as the infer_response of a
// ModelStreamInferResponse without error_message.
func (s *Stream) RecvProto() (*inferencepb.ModelStreamInferResponse, error) {
	var m *inferencepb.ModelStreamInferResponse
	var err error
	if s.shape == StreamShapeMLServer {
		ir := &inferencepb.ModelInferResponse{}
		if err = s.cs.RecvMsg(ir); err == nil {
			m = &inferencepb.ModelStreamInferResponse{InferResponse: ir}
		}
	} else {
		m = &inferencepb.ModelStreamInferResponse{}
		err = s.cs.RecvMsg(m)
	}
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case err != nil:
		return nil, callError(s.ctx, "ModelStreamInfer", err)
	}
	return m, nil
}

// Close cancels the stream; calls in progress fail.
func (s *Stream) Close() { s.cancel() }

// DecodeStreamResponse decodes one ModelStreamInferResponse.
func DecodeStreamResponse(m *inferencepb.ModelStreamInferResponse) (*StreamResponse, error) {
	const op = "ModelStreamInfer"
	r := &StreamResponse{}
	if ir := m.GetInferResponse(); ir != nil {
		r.ID = ir.GetId()
		if p, ok := ir.GetParameters()[oip.ParamTritonFinalResponse]; ok {
			if b, isBool := p.GetParameterChoice().(*inferencepb.InferParameter_BoolParam); isBool {
				r.Final, r.FinalKnown = b.BoolParam, true
			}
		}
		resp, err := oip.FromProtoResponse(ir)
		if err != nil && m.GetErrorMessage() == "" {
			return nil, &Error{Op: op, Message: "decode response: " + err.Error(), Err: err}
		}
		if resp != nil {
			resp.Model, resp.Version, resp.ID = ir.GetModelName(), ir.GetModelVersion(), ir.GetId()
			r.Response = resp
		}
	}
	if msg := m.GetErrorMessage(); msg != "" {
		r.Err = &Error{Op: op, Message: msg, Err: ErrStreamRequest}
	}
	return r, nil
}
