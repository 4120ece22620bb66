package oiptarget

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/loadgen"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// plainStreamServer is a gRPC server whose ModelStreamInfer answers each
// request with `responses` responses that carry no triton_final_response
// (as a server without Triton's parameters would), echoing the id unless
// wrongID; endAfter ends the whole stream after that many responses
// instead of waiting for the next request.
type plainStreamServer struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	responses int
	endAfter  bool
	wrongID   bool
}

func (plainStreamServer) ServerLive(context.Context, *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

func (plainStreamServer) ServerReady(context.Context, *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	return &inferencepb.ServerReadyResponse{Ready: true}, nil
}

func (plainStreamServer) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	return &inferencepb.ServerMetadataResponse{Name: "plain", Version: "1"}, nil
}

func (plainStreamServer) ModelReady(context.Context, *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	return &inferencepb.ModelReadyResponse{Ready: true}, nil
}

func (plainStreamServer) ModelMetadata(_ context.Context, r *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	t := []*inferencepb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1}}}
	o := []*inferencepb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}}}
	return &inferencepb.ModelMetadataResponse{Name: r.GetName(), Versions: []string{"1"}, Platform: "test", Inputs: t, Outputs: o}, nil
}

func (s plainStreamServer) ModelStreamInfer(st inferencepb.GRPCInferenceService_ModelStreamInferServer) error {
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		id := req.GetId()
		if s.wrongID {
			id = "not-" + id
		}
		for range s.responses {
			out := &inferencepb.ModelInferResponse{ModelName: req.GetModelName(), Id: id,
				Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}}},
				RawOutputContents: [][]byte{{1, 0, 0, 0}}}
			if err := st.Send(&inferencepb.ModelStreamInferResponse{InferResponse: out}); err != nil {
				return err
			}
		}
		if s.endAfter {
			return nil
		}
	}
}

func startPlainStreamServer(t *testing.T, s plainStreamServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	inferencepb.RegisterGRPCInferenceServiceServer(g, s)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// TestStreamingWithoutFinalFlag: the completion rules for servers that do
// not send triton_final_response — a configured count, one response by
// default, or the end of the stream — and the id check.
func TestStreamingWithoutFinalFlag(t *testing.T) {
	for _, c := range []struct {
		name      string
		srv       plainStreamServer
		responses int
		perReq    int64
		failure   string
	}{
		{"count", plainStreamServer{responses: 3}, 3, 3, ""},
		{"one by default", plainStreamServer{responses: 1}, 0, 1, ""},
		{"stream end", plainStreamServer{responses: 2, endAfter: true}, 5, 2, ""},
		{"wrong id", plainStreamServer{responses: 1, wrongID: true}, 0, 0, "validation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := grpcConfig(startPlainStreamServer(t, c.srv), "plain")
			cfg.Streaming = &loadgen.StreamConfig{Responses: c.responses}
			cfg.Inputs.Data = "zero"
			cfg.Load.Concurrency, cfg.Load.Requests = 2, 10
			res := runConfig(t, cfg)
			if c.failure != "" {
				if res.Errors[c.failure] != 10 || !strings.Contains(strings.Join(res.ErrorSamples[c.failure], " "), "not-") {
					t.Errorf("errors %v %v, want 10 %s", res.Errors, res.ErrorSamples, c.failure)
				}
				return
			}
			if res.Counts.OK != 10 || res.Counts.Responses != 10*c.perReq {
				t.Errorf("counts %+v, errors %v: want 10 requests of %d responses", res.Counts, res.ErrorSamples, c.perReq)
			}
		})
	}
}
