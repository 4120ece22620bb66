package reference

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// identity_bytes over gRPC raw, as scripts/bench-large.sh loads it: 1,000
// elements of 1 KiB, each distinct.
const bytesElems, bytesElemSize = 1000, 1024

func bytesRequestWire(t testing.TB) []byte {
	v := make([][]byte, bytesElems)
	for i := range v {
		v[i] = bytes.Repeat([]byte{byte(i)}, bytesElemSize)
		copy(v[i], fmt.Sprint(i))
	}
	in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.Bytes, Shape: []int64{1, bytesElems}, Data: v}
	pb, err := oip.ToProtoRequest(&oip.InferRequest{Model: "identity_bytes", Inputs: []oip.InferInput{{Tensor: in}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// bytesCall returns a ModelInfer call of identity_bytes as grpc-go makes it
// (unmarshal, interceptor, method); check verifies the marshalled answer
// holds the request's raw contents unchanged and, with views, reports
// whether the answer's raw contents are the request's own memory.
func bytesCall(t testing.TB) (call func(), check func() (reused bool)) {
	s, err := New(Config{GRPCAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wire := bytesRequestWire(t)
	g := &grpcService{s: s}
	info := &grpc.UnaryServerInfo{FullMethod: inferencepb.GRPCInferenceService_ModelInfer_FullMethodName}
	var req inferencepb.ModelInferRequest
	var resp *inferencepb.ModelInferResponse
	call = func() {
		req = inferencepb.ModelInferRequest{}
		if err := proto.Unmarshal(wire, &req); err != nil {
			t.Fatal(err)
		}
		r, err := s.unaryInterceptor(context.Background(), &req, info, func(ctx context.Context, req any) (any, error) {
			return g.ModelInfer(ctx, req.(*inferencepb.ModelInferRequest))
		})
		if err != nil {
			t.Fatal(err)
		}
		resp = r.(*inferencepb.ModelInferResponse)
	}
	check = func() bool {
		call()
		in := req.GetRawInputContents()[0]
		out := resp.GetRawOutputContents()
		if len(out) != 1 || !bytes.Equal(out[0], in) {
			t.Fatalf("identity_bytes answered %d raw outputs, not its input", len(out))
		}
		if o := resp.GetOutputs(); len(o) != 1 || o[0].GetName() != "OUTPUT0" || o[0].GetDatatype() != "BYTES" {
			t.Fatalf("identity_bytes answered outputs %v", o)
		}
		// The answer as it goes on the wire decodes to the input.
		b, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var back inferencepb.ModelInferResponse
		if err := proto.Unmarshal(b, &back); err != nil || !bytes.Equal(back.GetRawOutputContents()[0], in) {
			t.Fatalf("marshalled answer: %v", err)
		}
		return unsafe.SliceData(out[0]) == unsafe.SliceData(in)
	}
	return call, check
}

// withViews runs f with the gRPC views switch set to on.
func withViews(t *testing.T, on bool, f func()) {
	was := grpcViews
	grpcViews = on
	defer func() { grpcViews = was }()
	f()
}

// TestGRPCBytesIdentityViews: with the switch on, identity_bytes answers
// with the request's own raw contents; with it off (OIPKIT_GRPC_VIEWS=off)
// the answer is the same bytes, encoded anew, and traffic flows as before.
func TestGRPCBytesIdentityViews(t *testing.T) {
	for _, on := range []bool{true, false} {
		withViews(t, on, func() {
			_, check := bytesCall(t)
			if reused := check(); reused != on {
				t.Errorf("views %v: answer reuses the request's raw contents: %v", on, reused)
			}
		})
	}
}

// TestGRPCBytesOverGRPCViewsOff sends identity_bytes through a real gRPC
// server and client with the switch off and on: the same answer either way.
func TestGRPCBytesOverGRPCViewsOff(t *testing.T) {
	for _, on := range []bool{false, true} {
		withViews(t, on, func() {
			s, err := New(Config{GRPCAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := inferencepb.NewGRPCInferenceServiceClient(conn)
			var pb inferencepb.ModelInferRequest
			if err := proto.Unmarshal(bytesRequestWire(t), &pb); err != nil {
				t.Fatal(err)
			}
			resp, err := c.ModelInfer(ctx, &pb)
			if err != nil {
				t.Fatalf("views %v: %v", on, err)
			}
			if out := resp.GetRawOutputContents(); len(out) != 1 || !bytes.Equal(out[0], pb.GetRawInputContents()[0]) {
				t.Fatalf("views %v: the answer is not the input", on)
			}
		})
	}
}

// Allocations of one identity_bytes gRPC request (1,000 x 1 KiB), protobuf
// decoding of the request included: with views, none is the size of the
// tensor but protobuf's own copy of the raw contents. Measured: 18
// allocations, 1.06 MB (views off: 19, 2.09 MB: a new encoding of the
// answer).
const maxGRPCBytesAllocs = 21

func TestGRPCBytesIdentityAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, on := range []bool{true, false} {
		withViews(t, on, func() {
			call, _ := bytesCall(t)
			call()
			n := testing.AllocsPerRun(50, call)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range 20 {
				call()
			}
			runtime.ReadMemStats(&m1)
			perReq := (m1.TotalAlloc - m0.TotalAlloc) / 20
			t.Logf("views %v: %.0f allocations, %d bytes per request", on, n, perReq)
			if on && n > maxGRPCBytesAllocs {
				t.Errorf("views on: %.0f allocations per request, want at most %d", n, maxGRPCBytesAllocs)
			}
			if on && perReq > 2*bytesElems*(bytesElemSize+4)+64<<10 {
				t.Errorf("views on: %d bytes allocated per request; want the request's copy and the element headers (about %d)", perReq, bytesElems*(bytesElemSize+4)+24*bytesElems)
			}
		})
	}
}

// BenchmarkGRPCBytesIdentity times one identity_bytes gRPC request in
// process (protobuf decoding of the request included, marshalling of the
// answer not), with the views switch on and off.
func BenchmarkGRPCBytesIdentity(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("views=%v", on), func(b *testing.B) {
			was := grpcViews
			grpcViews = on
			defer func() { grpcViews = was }()
			call, _ := bytesCall(b)
			b.SetBytes(bytesElems * (bytesElemSize + 4))
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}
