package reference

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Allocation guards of the server's add_sub path: the REST handler and the
// gRPC ModelInfer method, called in process (net/http's and grpc-go's own
// per-request allocations are not counted; they are the same for any
// handler). Allocation counts are deterministic, unlike times.

// Allocations per add_sub request, measured then rounded up a little: 15
// (REST JSON), 21 (REST binary: the copied binary inputs and the request's
// binary_data_output map), 30 (gRPC raw, protobuf decoding included: 15 of
// them; the decoded request and the response message alias the protobuf
// buffers and the model's outputs). Of these, add_sub itself makes 5; the
// map of inputs handed to the model and the REST handler's statusWriter are
// pooled.
const (
	maxRESTJSONAllocs   = 17
	maxRESTBinaryAllocs = 23
	maxGRPCAllocs       = 32
)

// recorder is a ResponseWriter that keeps nothing, reused across requests.
type recorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header         { return w.h }
func (w *recorder) WriteHeader(code int)        { w.status = code }
func (w *recorder) Write(b []byte) (int, error) { return w.body.Write(b) }

// replay is a request body that can be read again after Reset.
type replay struct{ bytes.Reader }

func (*replay) Close() error { return nil }

func addSubTensors() []oip.InferInput {
	a, b := make([]int32, 16), make([]int32, 16)
	for i := range a {
		a[i], b[i] = int32(i+1), int32(i+101)
	}
	return []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: a}},
		{Tensor: tensor.Tensor{Name: "INPUT1", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: b}},
	}
}

func restAllocs(t *testing.T, binary bool) float64 {
	serve := restHandler(t, binary)
	serve()
	return testing.AllocsPerRun(200, serve)
}

// restHandler returns a function that serves one add_sub request through the
// REST handler, in process.
func restHandler(t testing.TB, binary bool) func() {
	s, err := New(Config{HTTPAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc := oip.RESTEncoding{BinaryInputs: binary, BinaryOutputs: binary}
	body, hl, err := oip.EncodeRESTRequest(&oip.InferRequest{Inputs: addSubTensors()}, enc)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/v2/models/add_sub/infer", nil)
	r.Header.Set("Content-Type", "application/json")
	if hl >= 0 {
		r.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	}
	r.ContentLength = int64(len(body))
	rb := new(replay)
	r.Body = rb
	w := &recorder{h: http.Header{}}
	serve := func() {
		rb.Reset(body)
		clear(w.h)
		w.status = 0
		w.body.Reset()
		s.serveHTTP(w, r)
		if w.status != http.StatusOK {
			t.Fatalf("HTTP %d: %s", w.status, w.body.Bytes())
		}
	}
	return serve
}

// BenchmarkAddSubHandler is the reference server's own work on an add_sub
// request (routing, decoding, validation, the model, statistics, metrics,
// encoding), without the network or net/http's parsing: what separates it
// from a bare handler answering the same bytes.
func BenchmarkAddSubHandler(b *testing.B) {
	for _, c := range []struct {
		name   string
		binary bool
	}{{"json", false}, {"binary", true}} {
		b.Run(c.name, func(b *testing.B) {
			serve := restHandler(b, c.binary)
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

func TestAddSubRESTAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, c := range []struct {
		name   string
		binary bool
		max    float64
	}{{"json", false, maxRESTJSONAllocs}, {"binary", true, maxRESTBinaryAllocs}} {
		n := restAllocs(t, c.binary)
		t.Logf("REST %s add_sub: %.0f allocations per request", c.name, n)
		if n > c.max {
			t.Errorf("REST %s add_sub: %.0f allocations per request, want at most %.0f", c.name, n, c.max)
		}
	}
}

func TestAddSubGRPCAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	s, err := New(Config{GRPCAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := oip.ToProtoRequest(&oip.InferRequest{Model: "add_sub", Inputs: addSubTensors()}, true)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	g := &grpcService{s: s}
	ctx := context.Background()
	call := func() {
		// As grpc-go does: unmarshal the request, call the method
		// through the interceptor.
		var req inferencepb.ModelInferRequest
		if err := proto.Unmarshal(wire, &req); err != nil {
			t.Fatal(err)
		}
		info := &grpc.UnaryServerInfo{FullMethod: inferencepb.GRPCInferenceService_ModelInfer_FullMethodName}
		_, err := s.unaryInterceptor(ctx, &req, info, func(ctx context.Context, req any) (any, error) {
			return g.ModelInfer(ctx, req.(*inferencepb.ModelInferRequest))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	call()
	n := testing.AllocsPerRun(200, call)
	t.Logf("gRPC raw add_sub: %.0f allocations per request", n)
	if n > maxGRPCAllocs {
		t.Errorf("gRPC raw add_sub: %.0f allocations per request, want at most %d", n, maxGRPCAllocs)
	}
}

// TestAddSubHTTP1Allocs guards the whole REST request on the fast path
// (http1.go), parsing and response writing included, over loopback: the
// client side below allocates nothing, so every allocation counted is the
// server's. Measured: the handler's count (maxRESTJSONAllocs,
// maxRESTBinaryAllocs) plus none of the fast path's own.
func TestAddSubHTTP1Allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	s, err := New(Config{HTTPAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(ctx) })
	for _, c := range []struct {
		name   string
		binary bool
		max    float64
	}{{"json", false, maxRESTJSONAllocs}, {"binary", true, maxRESTBinaryAllocs}} {
		enc := oip.RESTEncoding{BinaryInputs: c.binary, BinaryOutputs: c.binary}
		body, hl, err := oip.EncodeRESTRequest(&oip.InferRequest{Inputs: addSubTensors()}, enc)
		if err != nil {
			t.Fatal(err)
		}
		req := "POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: " + s.HTTPAddr() +
			"\r\nUser-Agent: alloc-test\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
		if hl >= 0 {
			req += oip.HeaderInferenceHeaderContentLength + ": " + strconv.Itoa(hl) + "\r\n"
		}
		wire := append([]byte(req+"\r\n"), body...)
		conn, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		buf := make([]byte, 64<<10)
		var status []byte
		roundTrip := func() {
			if _, err := conn.Write(wire); err != nil {
				t.Fatal(err)
			}
			n, want := 0, -1
			for want < 0 || n < want {
				m, err := conn.Read(buf[n:])
				if err != nil {
					t.Fatalf("read: %v after %q", err, buf[:n])
				}
				n += m
				if want < 0 {
					if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
						j := bytes.Index(buf[:i], []byte("Content-Length: "))
						if j < 0 {
							t.Fatalf("no Content-Length in %q", buf[:i])
						}
						k := j + len("Content-Length: ")
						l := 0
						for ; buf[k] >= '0' && buf[k] <= '9'; k++ {
							l = l*10 + int(buf[k]-'0')
						}
						want = i + 4 + l
					}
				}
			}
			status = buf[:12]
		}
		roundTrip()
		if string(status) != "HTTP/1.1 200" {
			t.Fatalf("%s: %q", c.name, buf[:200])
		}
		n := testing.AllocsPerRun(200, roundTrip)
		t.Logf("REST %s add_sub on the fast path: %.0f allocations per request", c.name, n)
		if n > c.max {
			t.Errorf("REST %s add_sub on the fast path: %.0f allocations per request, want at most %.0f", c.name, n, c.max)
		}
	}
}
