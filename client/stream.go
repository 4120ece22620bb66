package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// ErrStreamRequest is wrapped by the *Error of a StreamResponse whose
// request failed: the server answered it with a non-empty error_message
// and the stream stays usable.
var ErrStreamRequest = errors.New("request failed on the stream")

// Stream is one gRPC ModelStreamInfer call in the Triton / OpenVINO Model
// Server message shape: requests are ModelInferRequest, answers are
// ModelStreamInferResponse{error_message, infer_response}. Responses of
// different requests may interleave; match them by ID. Send and Recv may
// be called from different goroutines (one sender, one receiver).
type Stream struct {
	cs     inferencepb.GRPCInferenceService_ModelStreamInferClient
	ctx    context.Context
	cancel context.CancelFunc
	raw    bool
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

// Stream opens a ModelStreamInfer stream. The client's Timeout does not
// bound it (a stream lives as long as its caller wants); ctx does, and
// Close ends it. The client's metadata is sent.
func (c *GRPC) Stream(ctx context.Context) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	if len(c.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, c.md...)
	}
	cs, err := c.stub.ModelStreamInfer(ctx)
	if err != nil {
		cancel()
		return nil, callError(ctx, "ModelStreamInfer", err)
	}
	return &Stream{cs: cs, ctx: ctx, cancel: cancel, raw: c.raw}, nil
}

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
	if err := s.cs.Send(pb); err != nil {
		if err == io.EOF { // the stream ended; Recv has the status
			_, err = s.cs.Recv()
			for err == nil {
				_, err = s.cs.Recv()
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
// not decode.
func (s *Stream) Recv() (*StreamResponse, error) {
	const op = "ModelStreamInfer"
	m, err := s.cs.Recv()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, callError(s.ctx, op, err)
	}
	return DecodeStreamResponse(m)
}

// RecvProto returns the next message undecoded (io.EOF at a clean end).
func (s *Stream) RecvProto() (*inferencepb.ModelStreamInferResponse, error) {
	m, err := s.cs.Recv()
	if err != nil && err != io.EOF {
		return nil, callError(s.ctx, "ModelStreamInfer", err)
	}
	return m, err
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
