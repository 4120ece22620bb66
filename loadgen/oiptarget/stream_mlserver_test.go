package oiptarget

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/loadgen"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/client"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// mlserverLike is a gRPC server that answers like MLServer 1.7: its
// metadata names "mlserver", stream_count is INT32 [1] → INT32 [1], and
// ModelStreamInfer streams plain ModelInferResponse messages (n responses
// carrying 1..n for INPUT0 = n), every one labelled with the first request's
// id, without triton_final_response, ending the stream with OK once the
// client half-closed.
type mlserverLike struct {
	pb.UnimplementedGRPCInferenceServiceServer
}

func (mlserverLike) ServerLive(context.Context, *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return &pb.ServerLiveResponse{Live: true}, nil
}

func (mlserverLike) ServerReady(context.Context, *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: true}, nil
}

func (mlserverLike) ModelReady(context.Context, *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	return &pb.ModelReadyResponse{Ready: true}, nil
}

func (mlserverLike) ServerMetadata(context.Context, *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	return &pb.ServerMetadataResponse{Name: "mlserver", Version: "1.7.1"}, nil
}

func (mlserverLike) ModelMetadata(_ context.Context, r *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	if r.GetName() != "stream_count" {
		return nil, status.Errorf(codes.NotFound, "Model %s not found", r.GetName())
	}
	return &pb.ModelMetadataResponse{Name: "stream_count",
		Inputs:  []*pb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1}}},
		Outputs: []*pb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}}}}, nil
}

func mlserverStream(_ any, ss grpc.ServerStream) error {
	first := ""
	for {
		req := &pb.ModelInferRequest{}
		if err := ss.RecvMsg(req); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if first == "" {
			first = req.GetId()
		}
		var n int32
		if in := req.GetInputs(); len(in) == 1 && len(in[0].GetContents().GetIntContents()) == 1 {
			n = in[0].GetContents().GetIntContents()[0]
		} else if raw := req.GetRawInputContents(); len(raw) == 1 && len(raw[0]) == 4 {
			n = int32(raw[0][0]) | int32(raw[0][1])<<8 | int32(raw[0][2])<<16 | int32(raw[0][3])<<24
		}
		for k := int32(1); k <= n; k++ {
			if err := ss.SendMsg(&pb.ModelInferResponse{ModelName: "stream_count", Id: first,
				Outputs: []*pb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1, 1},
					Contents: &pb.InferTensorContents{IntContents: []int32{k}}}}}); err != nil {
				return err
			}
		}
	}
}

func startMLServerLike(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	desc := pb.GRPCInferenceService_ServiceDesc
	desc.Streams = []grpc.StreamDesc{{StreamName: "ModelStreamInfer", Handler: mlserverStream, ServerStreams: true, ClientStreams: true}}
	srv := grpc.NewServer()
	srv.RegisterService(&desc, mlserverLike{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestStreamingMLServerShape streams against a server that answers in
// MLServer's shape, chosen and detected: every request gets its n
// responses, none is an error, and the request ends with the stream.
func TestStreamingMLServerShape(t *testing.T) {
	addr := startMLServerLike(t)
	for _, c := range []struct {
		shape   client.StreamShape
		protoc  client.Protocol
		n       int64
		respond int
	}{
		{client.StreamShapeMLServer, client.ProtocolGRPCRaw, 3, 0},
		{"", client.ProtocolGRPC, 3, 0},                        // auto: the metadata names mlserver
		{client.StreamShapeAuto, client.ProtocolGRPCRaw, 0, 0}, // no response: the stream's end completes it
		{client.StreamShapeMLServer, client.ProtocolGRPCRaw, 4, 2},
	} {
		cfg := grpcConfig(addr, "stream_count")
		cfg.Target.Protocol = c.protoc
		cfg.Streaming = &loadgen.StreamConfig{Shape: c.shape, Responses: c.respond}
		cfg.Inputs.File = tokensInput(t, int(c.n))
		cfg.Load.Concurrency, cfg.Load.Requests = 2, 20
		res := runConfig(t, cfg)
		want := c.n
		if c.respond > 0 {
			want = int64(c.respond)
		}
		cn := res.Counts
		if cn.OK != 20 || cn.Errors+cn.Timeouts != 0 || cn.Responses != want*cn.OK {
			t.Fatalf("shape %q n %d: counts %+v, errors %v %v", c.shape, c.n, cn, res.Errors, res.ErrorSamples)
		}
		if h := res.Histograms.ResponsesPerRequest; int64(h.Min()) != want || int64(h.Max()) != want {
			t.Errorf("shape %q n %d: responses per request %d..%d, want %d", c.shape, c.n, h.Min(), h.Max(), want)
		}
		if got := res.Histograms.InterResponse.Count(); want > 0 && got != (want-1)*cn.OK {
			t.Errorf("shape %q n %d: %d gaps, want %d", c.shape, c.n, got, (want-1)*cn.OK)
		}
	}
}

// TestStreamingTritonShapeAgainstMLServer: read in Triton's shape,
// MLServer's model_name is an error_message, so every request fails; the
// shape has to be right.
func TestStreamingTritonShapeAgainstMLServer(t *testing.T) {
	cfg := grpcConfig(startMLServerLike(t), "stream_count")
	cfg.Streaming = &loadgen.StreamConfig{Shape: client.StreamShapeTriton}
	cfg.Inputs.File = tokensInput(t, 2)
	cfg.Load.Concurrency, cfg.Load.Requests = 1, 3
	res := runConfig(t, cfg)
	if res.Counts.OK != 0 || res.Counts.Errors == 0 {
		t.Fatalf("counts %+v: want every request failed", res.Counts)
	}
}

func TestStreamShapeConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  loadgen.Config
		want string
	}{
		{loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{Shape: "ovms"}}, "Streaming.Shape"},
		{loadgen.Config{Target: loadgen.TargetConfig{HTTP: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{Shape: client.StreamShapeMLServer}}, "Streaming.Shape"},
	} {
		err := Normalize(&c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line naming %s", c.cfg.Streaming, err, c.want)
		}
	}
	cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{Shape: client.StreamShapeAuto}}
	if err := Normalize(&cfg); err != nil || cfg.Streaming.Shape != "" {
		t.Errorf("auto over REST: %v, shape %q", err, cfg.Streaming.Shape)
	}
}
