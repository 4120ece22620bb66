package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// ModelStreamInfer. Runtimes disagree on its messages: Triton and OpenVINO
// Model Server answer ModelStreamInferResponse{error_message,
// infer_response} (the catalog's reading, OIP-EXT-SEQ-006); MLServer
// streams plain ModelInferResponse messages on the same RPC. The suite
// receives each message as bytes and reads it both ways, so that a spec can
// say which reading a server follows instead of failing to decode.

// StreamShape is the reading a stream message decodes under.
type StreamShape string

// The readings.
const (
	// ShapeTriton: ModelStreamInferResponse{error_message, infer_response}.
	ShapeTriton StreamShape = "ModelStreamInferResponse (Triton, OpenVINO Model Server)"
	// ShapeMLServer: a plain ModelInferResponse per message.
	ShapeMLServer StreamShape = "ModelInferResponse (MLServer)"
)

// maxStreamMessages bounds the messages one stream call keeps: a server
// that floods the stream cannot bloat the suite.
const maxStreamMessages = 1000

// StreamMessage is one message received on a stream.
type StreamMessage struct {
	Shape StreamShape // "" when it decodes under neither reading
	// Error is error_message (Triton reading).
	Error string
	// Resp is infer_response (Triton reading) or the message itself
	// (MLServer reading); nil when absent.
	Resp *pb.ModelInferResponse
	// DecodeErr says why the message decodes under neither reading.
	DecodeErr error
}

// Final is the response's triton_final_response parameter, and whether it
// is present as a boolean.
func (m StreamMessage) Final() (final, ok bool) {
	p, present := m.Resp.GetParameters()[oip.ParamTritonFinalResponse]
	if !present {
		return false, false
	}
	b, isBool := p.GetParameterChoice().(*pb.InferParameter_BoolParam)
	if !isBool {
		return false, false
	}
	return b.BoolParam, true
}

// decodeStreamMessage reads b under the Triton reading when it fits (only
// fields 1 and 2, field 2 a ModelInferResponse), else as MLServer's.
func decodeStreamMessage(b []byte) StreamMessage {
	tri := &pb.ModelStreamInferResponse{}
	if proto.Unmarshal(b, tri) == nil && len(tri.ProtoReflect().GetUnknown()) == 0 &&
		(tri.GetInferResponse() == nil || len(tri.GetInferResponse().ProtoReflect().GetUnknown()) == 0) {
		return StreamMessage{Shape: ShapeTriton, Error: tri.GetErrorMessage(), Resp: tri.GetInferResponse()}
	}
	ml := &pb.ModelInferResponse{}
	err := proto.Unmarshal(b, ml)
	if err == nil && len(ml.ProtoReflect().GetUnknown()) == 0 {
		return StreamMessage{Shape: ShapeMLServer, Resp: ml}
	}
	if err == nil {
		err = errors.New("fields unknown to both ModelStreamInferResponse and ModelInferResponse")
	}
	return StreamMessage{DecodeErr: fmt.Errorf("%d-byte message is neither a ModelStreamInferResponse nor a ModelInferResponse: %v", len(b), err)}
}

// StreamCall is one ModelStreamInfer call: what was sent, what came back,
// and how it ended.
type StreamCall struct {
	Sent       []*pb.ModelInferRequest
	HalfClosed bool
	Msgs       []StreamMessage
	// Ended: the server ended the stream, with status End (nil for OK).
	// When Ended is false the suite stopped waiting (its condition was met
	// or its time ran out) and cancelled the stream.
	Ended bool
	End   error
	// Err is set when the call got no answer at all: the route does not
	// answer, the stream could not be opened, or time ran out before any
	// message or end.
	Err error

	reported bool
}

// StreamOptions say how long to read a stream.
type StreamOptions struct {
	// HalfClose closes the sending side after the requests; the server
	// should then end the stream once it has answered them.
	HalfClose bool
	// Until, when set, stops reading as soon as it returns true.
	Until func(*StreamCall) bool
}

// ByID groups the messages by infer_response.id, in arrival order.
func (s *StreamCall) ByID() map[string][]StreamMessage {
	out := map[string][]StreamMessage{}
	for _, m := range s.Msgs {
		out[m.Resp.GetId()] = append(out[m.Resp.GetId()], m)
	}
	return out
}

// Shapes lists the readings the messages followed, once each.
func (s *StreamCall) Shapes() []StreamShape {
	var out []StreamShape
	for _, m := range s.Msgs {
		if m.Shape != "" && !containsShape(out, m.Shape) {
			out = append(out, m.Shape)
		}
	}
	return out
}

func containsShape(list []StreamShape, s StreamShape) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Got summarizes the outcome for messages.
func (s *StreamCall) Got() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d message(s)", len(s.Msgs))
	switch {
	case s.Err != nil:
		fmt.Fprintf(&b, ", no answer: %v", s.Err)
	case s.Ended && s.End == nil:
		b.WriteString(", then the stream ended with OK")
	case s.Ended:
		st := status.Convert(s.End)
		fmt.Fprintf(&b, ", then the stream ended with %s: %q", st.Code(), clipText(st.Message(), 300))
	default:
		b.WriteString(", stream still open")
	}
	return b.String()
}

// Evidence renders the call for the report.
func (s *StreamCall) Evidence() *report.Evidence {
	if s == nil {
		return nil
	}
	var req []string
	for _, r := range s.Sent {
		req = append(req, protoText(r))
	}
	if s.HalfClosed {
		req = append(req, "(half-closed)")
	}
	var resp []string
	for _, m := range s.Msgs {
		switch {
		case m.DecodeErr != nil:
			resp = append(resp, m.DecodeErr.Error())
		case m.Shape == ShapeTriton:
			resp = append(resp, protoText(&pb.ModelStreamInferResponse{ErrorMessage: m.Error, InferResponse: m.Resp}))
		default:
			resp = append(resp, "(as ModelInferResponse) "+protoText(m.Resp))
		}
	}
	st := "gRPC OK"
	switch {
	case s.Err != nil:
		st = clipText("no answer: "+s.Err.Error(), maxEvidenceBody)
	case s.Ended && s.End != nil:
		c := status.Convert(s.End)
		st = clipText(fmt.Sprintf("gRPC %s: %s", c.Code(), c.Message()), maxEvidenceBody)
	case !s.Ended:
		st = "stream still open when the suite stopped reading"
	}
	return &report.Evidence{
		Request:  report.Message{Method: "RPC stream", Target: methodPrefix + "ModelStreamInfer", Body: clip(strings.Join(req, "\n"), maxEvidenceBody)},
		Response: report.Message{Status: st, Body: clip(strings.Join(resp, "\n"), maxEvidenceBody)},
	}
}

// noAnswer is the reason the call has no answer at all, or nil.
func (s *StreamCall) noAnswer() error {
	if s.Err != nil {
		return fmt.Errorf("ModelStreamInfer: no answer: %v", s.Err)
	}
	return nil
}

// stream runs one ModelStreamInfer call within the client's timeout. Like
// call, it never skips.
func (t *Target) stream(ctx context.Context, reqs []*pb.ModelInferRequest, o StreamOptions) *StreamCall {
	s := &StreamCall{Sent: reqs}
	method := methodPrefix + "ModelStreamInfer"
	route := grpcRoute(method)
	if s.Err = t.routes.check(route); s.Err != nil {
		return s
	}
	cctx, cancel := t.grpc.Context(ctx)
	defer cancel()
	desc := &grpc.StreamDesc{StreamName: "ModelStreamInfer", ServerStreams: true, ClientStreams: true}
	cs, err := t.grpc.Conn().NewStream(cctx, desc, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		s.Err = err
		return s
	}
	for _, r := range reqs {
		if cs.SendMsg(r) != nil {
			break // the stream ended; RecvMsg below has its status
		}
	}
	if o.HalfClose {
		s.HalfClosed = cs.CloseSend() == nil
	}
	for len(s.Msgs) < maxStreamMessages {
		var raw rawReply
		err := cs.RecvMsg(&raw)
		if err == io.EOF {
			s.Ended = true
			break
		}
		if err != nil {
			if code := status.Code(err); cctx.Err() != nil && (code == codes.DeadlineExceeded || code == codes.Canceled) {
				// The suite's time ran out, not the server's verdict.
				if len(s.Msgs) == 0 && ctx.Err() == nil {
					s.Err = err
					t.routes.timedOut(route, err)
				}
				break
			}
			s.Ended, s.End = true, err
			break
		}
		s.Msgs = append(s.Msgs, decodeStreamMessage(raw.b))
		if o.Until != nil && o.Until(s) {
			break
		}
	}
	return s
}

// StreamInfer makes one ModelStreamInfer call: it sends reqs, half-closes
// when o says so, and reads until the server ends the stream, o.Until is
// satisfied, or the client's timeout passes. A call on a route that does
// not answer ends the spec as not run.
func StreamInfer(ctx context.Context, reqs []*pb.ModelInferRequest, o StreamOptions) *StreamCall {
	s := current.stream(ctx, reqs, o)
	sent(s)
	current.specGate(s.Err, "ModelStreamInfer", true)
	return s
}

// CompareTensor reports how got differs from want (datatype, shape,
// elements bit-exact), or nil.
func CompareTensor(want, got tensor.Tensor) error { return compareTensor(want, got, false) }

// Stream is StreamInfer for a probe.
func (p *Prober) Stream(ctx context.Context, reqs []*pb.ModelInferRequest, o StreamOptions) *StreamCall {
	return p.t.stream(ctx, reqs, o)
}
