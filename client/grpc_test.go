package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// cannedGRPC is a test server with canned answers: model "unknown" is
// NOT_FOUND, model "slow" blocks until the caller gives up, any other model
// echoes its inputs as outputs (raw if the request was raw).
type cannedGRPC struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer

	mu    sync.Mutex
	md    []metadata.MD
	peers map[string]int
}

func (s *cannedGRPC) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	p, _ := peer.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.md = append(s.md, md)
	if s.peers == nil {
		s.peers = map[string]int{}
	}
	s.peers[p.Addr.String()]++
}

func (s *cannedGRPC) lastMD() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.md[len(s.md)-1]
}

func (s *cannedGRPC) ServerLive(ctx context.Context, _ *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	s.record(ctx)
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

func (s *cannedGRPC) ServerReady(ctx context.Context, _ *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	s.record(ctx)
	return &inferencepb.ServerReadyResponse{Ready: false}, nil
}

func (s *cannedGRPC) ModelReady(ctx context.Context, r *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	s.record(ctx)
	switch r.Name {
	case "unknown":
		return nil, status.Error(codes.NotFound, "unknown model")
	case "slow":
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &inferencepb.ModelReadyResponse{Ready: r.Version != "9"}, nil
}

func (s *cannedGRPC) ServerMetadata(ctx context.Context, _ *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	s.record(ctx)
	return &inferencepb.ServerMetadataResponse{Name: "canned", Version: "9.9", Extensions: []string{"a", "b"}}, nil
}

func (s *cannedGRPC) ModelMetadata(ctx context.Context, r *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	s.record(ctx)
	if r.Name == "unknown" {
		return nil, status.Error(codes.NotFound, "unknown model")
	}
	return &inferencepb.ModelMetadataResponse{
		Name: r.Name, Versions: []string{"1"}, Platform: "go",
		Inputs:  []*inferencepb.ModelMetadataResponse_TensorMetadata{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{-1, 16}}},
		Outputs: []*inferencepb.ModelMetadataResponse_TensorMetadata{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{-1, 16}}},
	}, nil
}

func (s *cannedGRPC) ModelInfer(ctx context.Context, r *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	s.record(ctx)
	switch r.ModelName {
	case "unknown":
		return nil, status.Error(codes.NotFound, "unknown model")
	case "slow":
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case "garbage": // raw and typed contents together: not decodable
		return &inferencepb.ModelInferResponse{
			ModelName:         r.ModelName,
			Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "X", Datatype: "INT32", Shape: []int64{1}, Contents: &inferencepb.InferTensorContents{IntContents: []int32{1}}}},
			RawOutputContents: [][]byte{{1, 0, 0, 0}},
		}, nil
	}
	resp := &inferencepb.ModelInferResponse{
		ModelName: r.ModelName, ModelVersion: "7", Id: r.Id,
		RawOutputContents: r.RawInputContents,
	}
	for _, in := range r.Inputs {
		resp.Outputs = append(resp.Outputs, &inferencepb.ModelInferResponse_InferOutputTensor{
			Name: "OUT_" + in.Name, Datatype: in.Datatype, Shape: in.Shape, Contents: in.Contents,
		})
	}
	return resp, nil
}

// grpcServer starts the canned server on 127.0.0.1:0.
func grpcServer(t *testing.T) (*cannedGRPC, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impl := &cannedGRPC{}
	srv := grpc.NewServer()
	inferencepb.RegisterGRPCInferenceServiceServer(srv, impl)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return impl, ln.Addr().String()
}

func grpcClient(t *testing.T, addr string, raw bool, opts client.Options) *client.GRPC {
	t.Helper()
	c, err := client.NewGRPC(addr, raw, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestNewGRPCValidatesAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8001", "localhost:1", "[::1]:8001", ":8001"} {
		c, err := client.NewGRPC(addr, false, client.Options{})
		if err != nil {
			t.Errorf("NewGRPC(%q): %v", addr, err)
			continue
		}
		c.Close()
	}
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:http", "host:70000", "a:b:c"} {
		if c, err := client.NewGRPC(addr, false, client.Options{}); err == nil {
			c.Close()
			t.Errorf("NewGRPC(%q) succeeded, want an error", addr)
		}
	}
	_, err := client.NewGRPC("http://127.0.0.1:8001/v2", false, client.Options{})
	if err == nil || !strings.Contains(err.Error(), "host:port") || !strings.Contains(err.Error(), `"127.0.0.1:8001"`) {
		t.Errorf("a URL target: %v, want an error suggesting 127.0.0.1:8001", err)
	}
	if _, err := client.New("http://127.0.0.1:8001", client.ProtocolGRPCRaw, client.Options{}); err == nil {
		t.Error("New with a URL for grpc-raw succeeded")
	}
}

func TestGRPCHealthAndMetadata(t *testing.T) {
	_, addr := grpcServer(t)
	c := grpcClient(t, addr, false, client.Options{})
	ctx := context.Background()

	if live, err := c.ServerLive(ctx); err != nil || !live {
		t.Errorf("ServerLive = %v, %v", live, err)
	}
	if ready, err := c.ServerReady(ctx); err != nil || ready {
		t.Errorf("ServerReady = %v, %v; want false, nil", ready, err)
	}
	if ready, err := c.ModelReady(ctx, "m", ""); err != nil || !ready {
		t.Errorf("ModelReady = %v, %v", ready, err)
	}
	if ready, err := c.ModelReady(ctx, "m", "9"); err != nil || ready {
		t.Errorf("ModelReady v9 = %v, %v; want false, nil", ready, err)
	}
	ready, err := c.ModelReady(ctx, "unknown", "")
	e := asError(t, err)
	if ready || e.GRPCCode != codes.NotFound || e.Message != "unknown model" || e.HTTPStatus != 0 || e.Op != "ModelReady" {
		t.Errorf("ModelReady unknown = %v, %+v", ready, e)
	}
	if got, want := e.Error(), "ModelReady: gRPC NotFound: unknown model"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}

	sm, err := c.ServerMetadata(ctx)
	if err != nil || sm.Name != "canned" || sm.Version != "9.9" || !slices.Equal(sm.Extensions, []string{"a", "b"}) {
		t.Errorf("ServerMetadata = %+v, %v", sm, err)
	}
	mm, err := c.ModelMetadata(ctx, "add_sub", "1")
	if err != nil || mm.Name != "add_sub" || len(mm.Inputs) != 1 || mm.Inputs[0].Datatype != tensor.Int32 ||
		!slices.Equal(mm.Inputs[0].Shape, []int64{-1, 16}) {
		t.Errorf("ModelMetadata = %+v, %v", mm, err)
	}
	if _, err := c.ModelMetadata(ctx, "unknown", ""); asError(t, err).GRPCCode != codes.NotFound {
		t.Errorf("ModelMetadata unknown: %v", err)
	}
}

func TestGRPCMetadataAndAuthority(t *testing.T) {
	impl, addr := grpcServer(t)
	c := grpcClient(t, addr, false, client.Options{
		Host:   "models.example.com",
		Header: http.Header{"Authorization": {"Bearer t0k"}, "X-Multi": {"a", "b"}},
	})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-caller", "kept")
	if _, err := c.ServerLive(ctx); err != nil {
		t.Fatal(err)
	}
	md := impl.lastMD()
	if got := md.Get("authorization"); !slices.Equal(got, []string{"Bearer t0k"}) {
		t.Errorf("authorization = %q", got)
	}
	if got := md.Get("x-multi"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("x-multi = %q", got)
	}
	if got := md.Get("x-caller"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("caller metadata = %q", got)
	}
	if got := md.Get(":authority"); !slices.Equal(got, []string{"models.example.com"}) {
		t.Errorf(":authority = %q", got)
	}
	if ua := md.Get("user-agent"); len(ua) != 1 || !strings.HasPrefix(ua[0], "oipkit/") {
		t.Errorf("user-agent = %q", ua)
	}

	// Stub calls carry metadata only through Context.
	cctx, cancel := c.Context(context.Background())
	defer cancel()
	if _, ok := cctx.Deadline(); !ok {
		t.Error("Context has no deadline")
	}
	if _, err := c.Stub().ServerLive(cctx, &inferencepb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := impl.lastMD().Get("authorization"); len(got) != 1 {
		t.Errorf("Stub with Context: authorization = %q", got)
	}
	if _, err := c.Stub().ServerLive(context.Background(), &inferencepb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := impl.lastMD().Get("authorization"); len(got) != 0 {
		t.Errorf("bare Stub: authorization = %q", got)
	}
}

func TestGRPCTimeout(t *testing.T) {
	_, addr := grpcServer(t)
	c := grpcClient(t, addr, false, client.Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := c.ModelReady(context.Background(), "slow", "")
	// A generous bound: the handler would otherwise block until the test ends.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v, want about the 200ms timeout", d)
	}
	e := asError(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || e.GRPCCode != codes.DeadlineExceeded {
		t.Errorf("error = %v (%+v), want DeadlineExceeded", err, e)
	}

	// An earlier context deadline wins; cancellation is reported as such.
	c2 := grpcClient(t, addr, false, client.Options{Timeout: time.Hour})
	dctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c2.ModelReady(dctx, "slow", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context deadline: %v", err)
	}
	cctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c2.ServerLive(cctx); !errors.Is(err, context.Canceled) || asError(t, err).GRPCCode != codes.Canceled {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestGRPCConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := grpcClient(t, addr, false, client.Options{Timeout: 2 * time.Second})
	live, err := c.ServerLive(context.Background())
	if e := asError(t, err); live || e.GRPCCode != codes.Unavailable {
		t.Errorf("ServerLive = %v, %+v; want UNAVAILABLE", live, e)
	}
}

func TestGRPCSeveralConnections(t *testing.T) {
	impl, addr := grpcServer(t)
	c := grpcClient(t, addr, false, client.Options{Connections: 3})
	for range 9 {
		if _, err := c.ServerLive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Stub and Conn go round-robin too.
	for range 3 {
		if _, err := c.Stub().ServerLive(context.Background(), &inferencepb.ServerLiveRequest{}); err != nil {
			t.Fatal(err)
		}
		if err := c.Conn().Invoke(context.Background(), inferencepb.GRPCInferenceService_ServerLive_FullMethodName,
			&inferencepb.ServerLiveRequest{}, &inferencepb.ServerLiveResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	impl.mu.Lock()
	defer impl.mu.Unlock()
	if len(impl.peers) != 3 {
		t.Fatalf("calls came from %d connections, want 3: %v", len(impl.peers), impl.peers)
	}
	for p, n := range impl.peers {
		if n != 5 {
			t.Errorf("connection %s carried %d calls, want 5", p, n)
		}
	}
}

func TestGRPCResponseSizeLimit(t *testing.T) {
	_, addr := grpcServer(t)
	c := grpcClient(t, addr, true, client.Options{MaxResponseBytes: 1024})
	in, _ := tensor.New("IN", tensor.Uint8, []int64{4096}, make([]uint8, 4096))
	_, err := c.Infer(context.Background(), &oip.InferRequest{Model: "echo", Inputs: []oip.InferInput{{Tensor: in}}})
	if e := asError(t, err); e.GRPCCode != codes.ResourceExhausted {
		t.Errorf("error = %+v, want RESOURCE_EXHAUSTED", e)
	}
}

func TestGRPCInfer(t *testing.T) {
	_, addr := grpcServer(t)
	a, _ := tensor.New("A", tensor.Int32, []int64{2, 2}, []int32{1, -2, 3, 1 << 30})
	h, _ := tensor.New("H", tensor.FP16, []int64{2}, []tensor.Float16{0x3c00, 0xfc00})
	s, _ := tensor.New("S", tensor.Bytes, []int64{2}, [][]byte{[]byte("a"), []byte("\x00\xff")})
	for _, raw := range []bool{false, true} {
		c := grpcClient(t, addr, raw, client.Options{})
		inputs := []oip.InferInput{{Tensor: a}, {Tensor: s}}
		if raw {
			inputs = append(inputs, oip.InferInput{Tensor: h}) // FP16 has no typed field
		}
		resp, err := c.Infer(context.Background(), &oip.InferRequest{Model: "echo", Version: "1", ID: "req-1", Inputs: inputs})
		if err != nil {
			t.Fatalf("raw=%v: %v", raw, err)
		}
		if resp.Model != "echo" || resp.Version != "7" || resp.ID != "req-1" || len(resp.Outputs) != len(inputs) {
			t.Errorf("raw=%v: response %+v", raw, resp)
		}
		for _, in := range inputs {
			out, ok := resp.Output("OUT_" + in.Name)
			if !ok {
				t.Errorf("raw=%v: no output for %s", raw, in.Name)
				continue
			}
			if out.Datatype != in.Datatype || !slices.Equal(out.Shape, in.Shape) || !sameData(out.Data, in.Data) {
				t.Errorf("raw=%v: %s came back as %+v", raw, in.Name, out.Tensor)
			}
		}
	}

	c := grpcClient(t, addr, false, client.Options{})
	req := func(model string) *oip.InferRequest {
		return &oip.InferRequest{Model: model, Inputs: []oip.InferInput{{Tensor: a}}}
	}
	_, err := c.Infer(context.Background(), req("unknown"))
	if e := asError(t, err); e.GRPCCode != codes.NotFound || e.Message != "unknown model" || e.Op != "Infer" {
		t.Errorf("unknown model: %+v", e)
	}
	_, err = c.Infer(context.Background(), req("garbage"))
	if e := asError(t, err); e.GRPCCode != codes.OK || e.Err == nil {
		t.Errorf("undecodable response: %+v", e)
	}
	// FP16 in a typed request is sent raw, as ToProtoRequest forces it.
	resp, err := c.Infer(context.Background(), &oip.InferRequest{Model: "echo", Inputs: []oip.InferInput{{Tensor: h}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := resp.Output("OUT_H"); !sameData(out.Data, h.Data) {
		t.Errorf("FP16 came back as %v", out.Data)
	}
	if _, err := c.Infer(context.Background(), nil); err == nil {
		t.Error("nil request accepted")
	}
}

// sameData compares tensor element slices exactly (bit patterns for floats
// held as Float16/BFloat16, which is all these tests use).
func sameData(a, b any) bool {
	switch x := a.(type) {
	case [][]byte:
		y, ok := b.([][]byte)
		return ok && slices.EqualFunc(x, y, func(p, q []byte) bool { return string(p) == string(q) })
	case []int32:
		y, ok := b.([]int32)
		return ok && slices.Equal(x, y)
	case []tensor.Float16:
		y, ok := b.([]tensor.Float16)
		return ok && slices.Equal(x, y)
	}
	return false
}
