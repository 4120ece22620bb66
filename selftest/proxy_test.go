package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/oipkit/oipkit/reference/referencetest"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// A breakage wraps the reference server so that it breaks one rule. Either
// hook may be nil.
type breakage struct {
	name string
	// rest rewrites an HTTP exchange: it may change the request before it
	// is forwarded (in) and the answer before it is returned (out).
	rest *restHook
	// grpc intercepts every unary RPC.
	grpc grpc.UnaryServerInterceptor
	// grpcOpts are extra options of the gRPC front end (e.g. a codec).
	grpcOpts []grpc.ServerOption
	// stream rewrites ModelStreamInfer (broken_seq_test.go); nil forwards
	// it unchanged.
	stream *streamHook
	// failed are the requirements the report must show failed, and nothing
	// else may fail. warned must appear among the warnings (others may);
	// lenient must be lenient: client rules the server does not enforce.
	failed  []string
	warned  []string
	lenient []string
	// blocked are the requirements that fail only on answers that fail
	// another requirement (one defect, one failure): exactly these are
	// blocked.
	blocked []string
	// quiet must be neither failed nor warnings: deviations the catalog
	// only asks to record.
	quiet []string
	// args are extra `oipkit conform` arguments (e.g. a short --timeout).
	args []string
	// answered: the server answers every request, so no finding may say
	// that a request got no answer.
	answered bool
}

type restHook struct {
	// serve may answer a request itself (hang, stream, refuse) instead of
	// the reference server; it returns false to pass the request on.
	serve func(w http.ResponseWriter, r *http.Request) bool
	in    func(r *http.Request)
	out   func(r *http.Request, resp *answer)
}

// answer is an HTTP response being rewritten.
type answer struct {
	status int
	header http.Header
	body   []byte
	// chunked sends the answer without Content-Length, in pieces.
	chunked bool
}

// pieces reads b at most n bytes at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(out []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(out[:min(len(out), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}

// brokenServer starts the reference server behind a REST reverse proxy and a
// gRPC forwarding server that apply b, and returns their addresses.
func brokenServer(t *testing.T, b breakage) (httpURL, grpcAddr string) {
	t.Helper()
	httpURL, grpcAddr, _ = brokenServerStoppable(t, b)
	return httpURL, grpcAddr
}

// brokenServerStoppable is brokenServer plus a function that kills both
// front ends at once, as a crashing server would.
func brokenServerStoppable(t *testing.T, b breakage) (httpURL, grpcAddr string, stop func()) {
	t.Helper()
	ref := referencetest.Start(t)

	upstream, _ := url.Parse(ref.HTTPURL())
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	if b.rest != nil && b.rest.out != nil {
		proxy.ModifyResponse = func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			a := &answer{status: resp.StatusCode, header: resp.Header, body: body}
			b.rest.out(resp.Request, a)
			resp.StatusCode = a.status
			resp.Header = a.header
			if a.chunked {
				// No Content-Length: the answer goes out chunked, in
				// small pieces (the proxy flushes every write).
				resp.Header.Del("Content-Length")
				resp.ContentLength = -1
				resp.Body = io.NopCloser(&pieces{b: a.body, n: 1000})
				return nil
			}
			resp.Header.Set("Content-Length", strconv.Itoa(len(a.body)))
			resp.ContentLength = int64(len(a.body))
			resp.Body = io.NopCloser(bytes.NewReader(a.body))
			return nil
		}
	}
	proxy.FlushInterval = -1
	// The request body is read whole before it is forwarded: streaming it
	// through lets the upstream connection be closed under a response
	// still being copied ("ReverseProxy read error during body copy: use
	// of closed network connection"), which a client sees as a truncated
	// answer that no server sent.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.rest != nil && b.rest.serve != nil && b.rest.serve(w, r) {
			return
		}
		if b.rest != nil && b.rest.in != nil {
			b.rest.in(r)
		}
		body := requestBody(r)
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		proxy.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)

	conn, err := grpc.NewClient(ref.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	opts := append([]grpc.ServerOption(nil), b.grpcOpts...)
	if b.grpc != nil {
		opts = append(opts, grpc.UnaryInterceptor(b.grpc))
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterGRPCInferenceServiceServer(gs, forward{up: pb.NewGRPCInferenceServiceClient(conn), stream: b.stream})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			hs.CloseClientConnections()
			hs.Listener.Close()
			gs.Stop()
		})
	}
	return hs.URL, ln.Addr().String(), stop
}

// forward is a GRPCInferenceService that passes every core RPC, and
// ModelConfig, to the reference server.
type forward struct {
	pb.UnimplementedGRPCInferenceServiceServer
	up     pb.GRPCInferenceServiceClient
	stream *streamHook
}

func (f forward) ServerLive(ctx context.Context, r *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return f.up.ServerLive(ctx, r)
}
func (f forward) ServerReady(ctx context.Context, r *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return f.up.ServerReady(ctx, r)
}
func (f forward) ModelReady(ctx context.Context, r *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	return f.up.ModelReady(ctx, r)
}
func (f forward) ServerMetadata(ctx context.Context, r *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	return f.up.ServerMetadata(ctx, r)
}
func (f forward) ModelMetadata(ctx context.Context, r *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	return f.up.ModelMetadata(ctx, r)
}
func (f forward) ModelInfer(ctx context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	return f.up.ModelInfer(ctx, r)
}

// ModelConfig is the model_configuration extension, which the reference
// server advertises.
func (f forward) ModelConfig(ctx context.Context, r *pb.ModelConfigRequest) (*pb.ModelConfigResponse, error) {
	return f.up.ModelConfig(ctx, r)
}

// ----- helpers for REST rewrites -----

// editJSON applies edit to the JSON object at the start of a body (the
// whole body, or the JSON header of a binary body) and returns the new body
// and the new JSON length.
func editJSON(a *answer, edit func(m map[string]any)) {
	hl := len(a.body)
	if v := a.header.Get("Inference-Header-Content-Length"); v != "" {
		hl, _ = strconv.Atoi(v)
	}
	dec := json.NewDecoder(bytes.NewReader(a.body[:hl]))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return
	}
	edit(m)
	js, _ := json.Marshal(m)
	tail := a.body[hl:]
	a.body = append(js, tail...)
	if len(tail) > 0 {
		a.header.Set("Inference-Header-Content-Length", strconv.Itoa(len(js)))
	}
}

// outputs returns the "outputs" objects of a response object.
func outputs(m map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := m["outputs"].([]any)
	for _, o := range list {
		if om, ok := o.(map[string]any); ok {
			out = append(out, om)
		}
	}
	return out
}

func isInfer(r *http.Request) bool {
	return r.Method == http.MethodPost && bytes.HasSuffix([]byte(r.URL.Path), []byte("/infer"))
}

// requestBody reads r's body and puts it back, so the request can still be
// forwarded.
func requestBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// jsonError answers with an error status and body.
func jsonError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}
