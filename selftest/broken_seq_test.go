package selftest

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// streamHook breaks the forwarded ModelStreamInfer.
type streamHook struct {
	// unimplemented answers UNIMPLEMENTED, as a server without streaming.
	unimplemented bool
	// out rewrites each upstream message into the messages sent (any
	// proto message: MLServer's reading sends ModelInferResponse), or ends
	// the stream with err.
	out func(m *pb.ModelStreamInferResponse) (msgs []proto.Message, err error)
	// neverEnd keeps the stream open after the upstream ended it.
	neverEnd bool
}

// ModelStreamInfer forwards the stream to the reference server through
// f.stream.
func (f forward) ModelStreamInfer(ss grpc.BidiStreamingServer[pb.ModelInferRequest, pb.ModelStreamInferResponse]) error {
	h := f.stream
	if h == nil {
		h = &streamHook{}
	}
	if h.unimplemented {
		return status.Error(codes.Unimplemented, "method ModelStreamInfer not implemented")
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	up, err := f.up.ModelStreamInfer(ctx)
	if err != nil {
		return err
	}
	go func() {
		for {
			r, err := ss.Recv()
			if err != nil {
				up.CloseSend()
				return
			}
			if up.Send(r) != nil {
				return
			}
		}
	}()
	for {
		m, err := up.Recv()
		if err == io.EOF {
			if h.neverEnd {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		if err != nil {
			return err
		}
		msgs := []proto.Message{m}
		if h.out != nil {
			if msgs, err = h.out(m); err != nil {
				return err
			}
		}
		for _, o := range msgs {
			if err := ss.SendMsg(o); err != nil {
				return err
			}
		}
	}
}

// countValue is OUTPUT0's one INT32 of a stream_count response (raw or
// typed contents), or -1.
func countValue(r *pb.ModelInferResponse) int32 {
	if raw := r.GetRawOutputContents(); len(raw) > 0 && len(raw[0]) == 4 {
		return int32(binary.LittleEndian.Uint32(raw[0]))
	}
	if outs := r.GetOutputs(); len(outs) > 0 && len(outs[0].GetContents().GetIntContents()) == 1 {
		return outs[0].GetContents().GetIntContents()[0]
	}
	return -1
}

// seqRequest reports whether an accumulate request carries the sequence
// parameters named.
func hasParam(r *pb.ModelInferRequest, name string) bool {
	_, ok := r.GetParameters()[name]
	return ok
}

func init() {
	breakages = append(breakages, []breakage{
		{
			name: "stream-drop-id-echo",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if m.InferResponse != nil {
					m.InferResponse.Id = ""
				}
				return []proto.Message{m}, nil
			}},
			failed: []string{"OIP-EXT-SEQ-006"},
			warned: []string{"OIP-EXT-SEQ-007", "OIP-EXT-SEQ-008"},
		},
		{
			// MLServer's: every response of a stream carries the id of the
			// stream's first request (here the first id each spec sends),
			// so the values cannot be read by request: one defect, the ids
			// (OIP-EXT-SEQ-006), not the fixture's values (-010).
			name: "stream-first-request-id-on-every-response",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				first := map[string]string{"b": "a", "c": "a", "y": "x", "n1": "n0", "n3": "n0", "e2": "e0"}
				if r := m.InferResponse; r != nil && first[r.Id] != "" {
					r.Id = first[r.Id]
				}
				return []proto.Message{m}, nil
			}},
			failed: []string{"OIP-EXT-SEQ-006"},
		},
		{
			// Not a failure: MLServer's reading of the RPC (plain
			// ModelInferResponse messages, a failed request ends the
			// stream) is an ambiguity the suite names, and must not crash
			// it.
			name: "stream-mlserver-messages",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if m.ErrorMessage != "" {
					return nil, status.Error(codes.InvalidArgument, m.ErrorMessage)
				}
				return []proto.Message{m.InferResponse}, nil
			}},
			warned: []string{"OIP-EXT-SEQ-006", "OIP-EXT-SEQ-008"},
		},
		{
			name: "stream-error-ends-stream",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if m.ErrorMessage != "" {
					return nil, status.Error(codes.NotFound, m.ErrorMessage)
				}
				return []proto.Message{m}, nil
			}},
			warned: []string{"OIP-EXT-SEQ-008"},
		},
		{
			name: "stream-decoupled-first-response-only",
			stream: func() *streamHook {
				seen := map[string]bool{}
				return &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
					r := m.GetInferResponse()
					if r.GetModelName() == "stream_count" {
						if seen[r.GetId()] {
							return nil, nil
						}
						seen[r.GetId()] = true
						r.Parameters[oip.ParamTritonFinalResponse] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}
					}
					return []proto.Message{m}, nil
				}}
			}(),
			failed: []string{"OIP-EXT-SEQ-010"},
		},
		{
			name: "stream-final-flag-on-every-response",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if r := m.GetInferResponse(); r != nil && r.Parameters != nil {
					r.Parameters[oip.ParamTritonFinalResponse] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}
				}
				return []proto.Message{m}, nil
			}},
			failed: []string{"OIP-EXT-SEQ-010"},
		},
		{
			// The second response of every stream_count request is lost.
			name: "stream-drops-one-response",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if r := m.GetInferResponse(); r.GetModelName() == "stream_count" && countValue(r) == 2 {
					return nil, nil
				}
				return []proto.Message{m}, nil
			}},
			failed: []string{"OIP-EXT-SEQ-010"},
		},
		{
			// The first response of every stream_count request comes after
			// the second.
			name: "stream-reorders-responses",
			stream: func() *streamHook {
				held := map[string]proto.Message{}
				return &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
					r := m.GetInferResponse()
					if r.GetModelName() != "stream_count" || len(r.GetOutputs()) == 0 {
						return []proto.Message{m}, nil
					}
					if first, ok := held[r.GetId()]; ok {
						delete(held, r.GetId())
						return []proto.Message{m, first}, nil
					}
					if p := r.GetParameters()[oip.ParamTritonFinalResponse]; countValue(r) == 1 && !p.GetBoolParam() {
						held[r.GetId()] = m
						return nil, nil
					}
					return []proto.Message{m}, nil
				}}
			}(),
			failed: []string{"OIP-EXT-SEQ-010"},
		},
		{
			// The last response of a stream_count request lacks the
			// triton_final_response the others carry.
			name: "stream-missing-final-flag",
			stream: &streamHook{out: func(m *pb.ModelStreamInferResponse) ([]proto.Message, error) {
				if r := m.GetInferResponse(); r.GetModelName() == "stream_count" && r.GetParameters()[oip.ParamTritonFinalResponse].GetBoolParam() {
					delete(r.Parameters, oip.ParamTritonFinalResponse)
				}
				return []proto.Message{m}, nil
			}},
			failed: []string{"OIP-EXT-SEQ-010"},
		},
		{
			// sequence_start on a sequence still open continues it: the
			// server drops the flag, so the old sum carries on.
			name: "sequence-restart-keeps-state",
			grpc: func() grpc.UnaryServerInterceptor {
				var mu sync.Mutex
				open := map[string]bool{}
				return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
					if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "accumulate" && hasParam(r, "sequence_id") {
						id := r.Parameters["sequence_id"].String()
						mu.Lock()
						if r.Parameters["sequence_start"].GetBoolParam() && open[id] {
							delete(r.Parameters, "sequence_start")
						}
						open[id] = !r.Parameters["sequence_end"].GetBoolParam()
						mu.Unlock()
					}
					return h(ctx, req)
				}
			}(),
			failed: []string{"OIP-EXT-SEQ-011"},
		},
		{
			name:   "stream-open-after-half-close",
			stream: &streamHook{neverEnd: true},
			args:   []string{"--timeout", "2s"},
			failed: []string{"OIP-EXT-SEQ-006"},
			warned: []string{"OIP-EXT-SEQ-008"},
		},
		{
			// Advertises sequence, but ModelStreamInfer is not there. The
			// sequences themselves work (the probe sees their running sums),
			// so the listing is true (OIP-GEN-005 passes); the stream fails.
			name:   "stream-unimplemented",
			stream: &streamHook{unimplemented: true},
			failed: []string{"OIP-EXT-SEQ-006"},
			warned: []string{"OIP-EXT-SEQ-007", "OIP-EXT-SEQ-008"},
		},
		{
			// Streams and keeps sequences but does not list "sequence".
			name: "sequence-not-advertised",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if r.Method == http.MethodGet && r.URL.Path == "/v2" {
					editJSON(a, func(m map[string]any) {
						exts, _ := m["extensions"].([]any)
						m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return strings.HasPrefix(e.(string), "sequence") })
					})
				}
			}},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				resp, err := h(ctx, req)
				if m, ok := resp.(*pb.ServerMetadataResponse); ok && m != nil {
					m.Extensions = slices.DeleteFunc(m.Extensions, func(e string) bool { return strings.HasPrefix(e, "sequence") })
				}
				return resp, err
			},
			failed: []string{"OIP-EXT-SEQ-001"},
		},
		{
			// Does not list sequence(string_id), and answers a string
			// sequence_id without keeping its state: a silent wrong answer,
			// not a refusal. (A 5xx or INTERNAL instead is graded by
			// BeRejected.)
			name: "sequence-string-id-unlisted-ignored",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if r.Method == http.MethodGet && r.URL.Path == "/v2" {
					editJSON(a, func(m map[string]any) {
						exts, _ := m["extensions"].([]any)
						m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return e == "sequence(string_id)" })
					})
				}
			}},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "accumulate" {
					if _, isString := r.Parameters["sequence_id"].GetParameterChoice().(*pb.InferParameter_StringParam); isString {
						r.Parameters["sequence_start"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}
					}
				}
				resp, err := h(ctx, req)
				if m, ok := resp.(*pb.ServerMetadataResponse); ok && m != nil {
					m.Extensions = slices.DeleteFunc(m.Extensions, func(e string) bool { return e == "sequence(string_id)" })
				}
				return resp, err
			},
			failed: []string{"OIP-EXT-SEQ-002"},
		},
		{
			name: "sequence-id-ignored",
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "accumulate" && hasParam(r, "sequence_id") {
					// Every request starts a new sequence: no state is kept.
					r.Parameters["sequence_start"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}
				}
				return h(ctx, req)
			},
			failed:  []string{"OIP-EXT-SEQ-002"},
			lenient: []string{"OIP-EXT-SEQ-005"},
		},
		{
			name: "sequence-flags-without-id-accepted",
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				resp, err := h(ctx, req)
				if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "accumulate" && status.Code(err) == codes.InvalidArgument {
					out := &pb.ModelInferResponse{ModelName: r.ModelName, ModelVersion: "1", Outputs: []*pb.ModelInferResponse_InferOutputTensor{
						{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}, Contents: &pb.InferTensorContents{IntContents: []int32{1}}},
					}}
					return out, nil
				}
				return resp, err
			},
			lenient: []string{"OIP-EXT-SEQ-003", "OIP-EXT-SEQ-004"},
		},
	}...)
}
