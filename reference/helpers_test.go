package reference_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// httpResult is a REST answer.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// do sends one REST request; headers are name/value pairs.
func do(t testing.TB, method, url string, body []byte, headers ...string) httpResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}
}

func get(t testing.TB, url string) httpResult { return do(t, http.MethodGet, url, nil) }

func post(t testing.TB, url, body string, headers ...string) httpResult {
	return do(t, http.MethodPost, url, []byte(body), headers...)
}

// wantJSON checks status and Content-Type and decodes the body into v.
func wantJSON(t testing.TB, r httpResult, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
}

// wantError checks an error answer: the status, a JSON {"error": "..."} body
// with a non-empty message containing every one of mentions.
func wantError(t testing.TB, r httpResult, status int, mentions ...string) string {
	t.Helper()
	var e map[string]any
	wantJSON(t, r, status, &e)
	msg, ok := e["error"].(string)
	if !ok || msg == "" || len(e) != 1 {
		t.Fatalf("error body %s: want exactly {\"error\": non-empty string}", r.body)
	}
	for _, m := range mentions {
		if !strings.Contains(msg, m) {
			t.Errorf("error %q does not mention %q", msg, m)
		}
	}
	return msg
}

// inferREST posts req (encoded by package oip) to its model's infer route.
func inferREST(t testing.TB, base string, req *oip.InferRequest, enc oip.RESTEncoding) (*oip.InferResponse, httpResult) {
	t.Helper()
	body, hl, err := oip.EncodeRESTRequest(req, enc)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	if hl >= 0 {
		headers = []string{oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl)}
	}
	r := do(t, http.MethodPost, base+inferPath(req.Model, req.Version), body, headers...)
	if r.status != http.StatusOK {
		return nil, r
	}
	rhl := -1
	if h := r.header.Get(oip.HeaderInferenceHeaderContentLength); h != "" {
		if rhl, err = strconv.Atoi(h); err != nil {
			t.Fatalf("response %s %q: %v", oip.HeaderInferenceHeaderContentLength, h, err)
		}
	}
	resp, err := oip.DecodeRESTResponse(r.body, rhl)
	if err != nil {
		t.Fatalf("decode response %s: %v", r.body, err)
	}
	return resp, r
}

func inferPath(model, version string) string {
	if version != "" {
		return "/v2/models/" + model + "/versions/" + version + "/infer"
	}
	return "/v2/models/" + model + "/infer"
}

// dial returns a raw gRPC stub for the server's gRPC address.
func dial(t testing.TB, addr string) inferencepb.GRPCInferenceServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return inferencepb.NewGRPCInferenceServiceClient(conn)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode checks a gRPC error's code and that its message mentions every
// one of mentions.
func wantCode(t testing.TB, err error, code codes.Code, mentions ...string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("gRPC code %v (%v), want %v", st.Code(), err, code)
	}
	if code != codes.OK && st.Message() == "" {
		t.Errorf("empty status message for %v", code)
	}
	for _, m := range mentions {
		if !strings.Contains(st.Message(), m) {
			t.Errorf("status message %q does not mention %q", st.Message(), m)
		}
	}
}

// addSubRequest is a valid add_sub request: INPUT0 = 0..15, INPUT1 = 1s.
func addSubRequest() *oip.InferRequest {
	a := make([]int32, 16)
	b := make([]int32, 16)
	for i := range a {
		a[i], b[i] = int32(i), 1
	}
	return &oip.InferRequest{
		Model: "add_sub",
		Inputs: []oip.InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: a}},
			{Tensor: tensor.Tensor{Name: "INPUT1", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: b}},
		},
	}
}

// addSubJSON is addSubRequest as REST JSON.
const addSubJSON = `{"inputs":[
 {"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},
 {"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}`

// checkAddSub checks outputs of addSubRequest.
func checkAddSub(t testing.TB, resp *oip.InferResponse) {
	t.Helper()
	for _, name := range []string{"OUTPUT0", "OUTPUT1"} {
		o, ok := resp.Output(name)
		if !ok {
			t.Fatalf("no %s in %+v", name, resp.Outputs)
		}
		v, ok := o.Data.([]int32)
		if !ok || len(v) != 16 || o.Datatype != tensor.Int32 {
			t.Fatalf("%s = %s %v %T", name, o.Datatype, o.Shape, o.Data)
		}
		for i, e := range v {
			want := int32(i) + 1
			if name == "OUTPUT1" {
				want = int32(i) - 1
			}
			if e != want {
				t.Fatalf("%s[%d] = %d, want %d", name, i, e, want)
			}
		}
	}
}

// startWith starts a server with a custom repository (nil = fixtures) on
// loopback ports, for tests that need models referencetest does not load.
func startWith(t testing.TB, repo *model.Repository, opts ...func(*reference.Config)) *reference.Server {
	t.Helper()
	cfg := reference.DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := reference.New(cfg, repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

func statusCode(err error) codes.Code { return status.Code(err) }

// extNames is reference.Extensions as advertised strings.
func extNames() []string {
	var out []string
	for _, e := range reference.Extensions {
		out = append(out, string(e))
	}
	return append(out, reference.Capabilities...)
}
