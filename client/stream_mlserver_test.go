package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// mlserverLike answers like MLServer 1.7: ServerMetadata names "mlserver";
// ModelStreamInfer hands every request of the stream to the model of the
// first one, streams plain ModelInferResponse messages (stream_count: n
// responses carrying 1..n, shape [1,1] as MLServer's NumpyCodec makes it),
// labels each with the first request's id, ends the stream with OK when the
// client half-closes, and aborts it with NOT_FOUND for an unknown model.
func mlserverLike(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		switch method {
		case pb.GRPCInferenceService_ServerMetadata_FullMethodName:
			if err := ss.RecvMsg(&pb.ServerMetadataRequest{}); err != nil {
				return err
			}
			return ss.SendMsg(&pb.ServerMetadataResponse{Name: "mlserver", Version: "1.7.1"})
		case pb.GRPCInferenceService_ModelStreamInfer_FullMethodName:
			first := ""
			for {
				req := &pb.ModelInferRequest{}
				if err := ss.RecvMsg(req); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				if first == "" {
					if req.GetModelName() != "stream_count" {
						return status.Errorf(codes.NotFound, "Model %s with version  not found", req.GetModelName())
					}
					first = req.GetId()
				}
				n := req.GetInputs()[0].GetContents().GetIntContents()[0]
				for k := int32(1); k <= n; k++ {
					if err := ss.SendMsg(&pb.ModelInferResponse{ModelName: "stream_count", Id: first,
						Outputs: []*pb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1, 1},
							Contents: &pb.InferTensorContents{IntContents: []int32{k}}}}}); err != nil {
						return err
					}
				}
			}
		}
		return status.Errorf(codes.Unimplemented, "method %s", method)
	}))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func TestParseStreamShape(t *testing.T) {
	for in, want := range map[string]client.StreamShape{"": client.StreamShapeAuto, "auto": client.StreamShapeAuto,
		"triton": client.StreamShapeTriton, "mlserver": client.StreamShapeMLServer} {
		if got, err := client.ParseStreamShape(in); err != nil || got != want {
			t.Errorf("ParseStreamShape(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := client.ParseStreamShape("ovms"); err == nil {
		t.Error("ParseStreamShape(ovms) succeeded")
	}
	if client.StreamShapeOf(&oip.ServerMetadata{Name: "triton"}) != client.StreamShapeTriton ||
		client.StreamShapeOf(&oip.ServerMetadata{Name: "mlserver"}) != client.StreamShapeMLServer ||
		client.StreamShapeOf(nil) != client.StreamShapeTriton {
		t.Error("StreamShapeOf")
	}
}

func TestStreamMLServerShape(t *testing.T) {
	addr := mlserverLike(t)
	c, err := client.NewGRPC(addr, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, shape := range []client.StreamShape{client.StreamShapeMLServer, client.StreamShapeAuto} {
		st, err := c.StreamShaped(ctx, shape)
		if err != nil {
			t.Fatal(err)
		}
		if st.Shape() != client.StreamShapeMLServer {
			t.Fatalf("%s: shape %q", shape, st.Shape())
		}
		for _, r := range []*oip.InferRequest{countReq("stream_count", "a", 3), countReq("stream_count", "b", 2)} {
			if err := st.Send(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var got []int32
		for {
			r, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", shape, err)
			}
			if r.Err != nil || r.Response == nil || r.FinalKnown || r.ID != "a" || r.Response.Model != "stream_count" {
				t.Fatalf("%s: response %+v (err %v)", shape, r, r.Err)
			}
			got = append(got, r.Response.Outputs[0].Data.([]int32)[0])
		}
		if want := []int32{1, 2, 3, 1, 2}; len(got) != len(want) || got[0] != 1 || got[2] != 3 || got[4] != 2 {
			t.Fatalf("%s: outputs %v, want %v", shape, got, want)
		}
		st.Close()
	}
}

func TestStreamMLServerShapeError(t *testing.T) {
	c, err := client.NewGRPC(mlserverLike(t), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.StreamShaped(context.Background(), client.StreamShapeMLServer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Send(countReq("no_such_model", "x", 1)); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.GRPCCode != codes.NotFound || ce.Message == "" {
		t.Fatalf("Recv after MLServer aborted the stream = %v", err)
	}
}

// TestStreamTritonShapeMisreadsMLServer shows why the shape matters: read
// as ModelStreamInferResponse, MLServer's model_name (field 1) becomes an
// error_message.
func TestStreamTritonShapeMisreadsMLServer(t *testing.T) {
	c, err := client.NewGRPC(mlserverLike(t), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Send(countReq("stream_count", "a", 1)); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err == nil && (r.Err == nil || r.Err.Message != "stream_count") {
		t.Fatalf("Triton-shaped read of an MLServer message = %+v, want error_message %q", r, "stream_count")
	}
}
