package reference_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

func delayJSON(ms int) string {
	return `{"parameters":{"delay_ms":` + strconv.Itoa(ms) + `},"inputs":[{"name":"INPUT0","shape":[2],"datatype":"FP32","data":[1.5,-2]}]}`
}

func delayProto(ms int64) *inferencepb.ModelInferRequest {
	return &inferencepb.ModelInferRequest{ModelName: "delay",
		Parameters: map[string]*inferencepb.InferParameter{"delay_ms": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: ms}}},
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{2},
			Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1.5, -2}}}}}
}

// waitInflight polls /metrics until n inference requests are in flight.
func waitInflight(t *testing.T, base string, n int) {
	t.Helper()
	want := "oip_inflight_requests " + strconv.Itoa(n) + "\n"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(string(get(t, base+"/metrics").body), want) {
			return
		}
	}
	t.Fatalf("never saw %q", want)
}

// TestGracefulShutdown starts 500 ms delay requests over REST and gRPC,
// shuts down while they run, and checks that both still complete.
func TestGracefulShutdown(t *testing.T) {
	srv := startWith(t, nil)
	base := srv.HTTPURL()
	c := dial(t, srv.GRPCAddr())

	restDone := make(chan httpResult, 1)
	go func() { restDone <- post(t, base+"/v2/models/delay/infer", delayJSON(500)) }()
	grpcDone := make(chan error, 1)
	go func() {
		resp, err := c.ModelInfer(context.Background(), delayProto(500))
		if err == nil && len(resp.GetOutputs()) != 1 {
			err = errors.New("no output")
		}
		grpcDone <- err
	}()
	waitInflight(t, base, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	t.Logf("Shutdown waited %v for in-flight requests", time.Since(start))
	if r := <-restDone; r.status != http.StatusOK {
		t.Fatalf("in-flight REST request: %d %s", r.status, r.body)
	}
	if err := <-grpcDone; err != nil {
		t.Fatalf("in-flight gRPC request: %v", err)
	}
	// New connections are refused once shut down.
	if conn, err := net.DialTimeout("tcp", srv.HTTPAddr(), time.Second); err == nil {
		conn.Close()
		t.Error("REST still accepts connections after Shutdown")
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestShutdownDeadline checks the fallback: when the context ends before a
// long request finishes, Shutdown closes connections and reports the
// context's error instead of waiting.
func TestShutdownDeadline(t *testing.T) {
	srv := startWith(t, nil)
	c := dial(t, srv.GRPCAddr())
	restDone := make(chan struct{})
	go func() {
		defer close(restDone)
		req, _ := http.NewRequest(http.MethodPost, srv.HTTPURL()+"/v2/models/delay/infer", strings.NewReader(delayJSON(30_000)))
		if resp, err := httpClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	grpcDone := make(chan error, 1)
	go func() {
		_, err := c.ModelInfer(context.Background(), delayProto(30_000))
		grpcDone <- err
	}()
	waitInflight(t, srv.HTTPURL(), 2)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := srv.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-grpcDone:
		if code := statusCode(err); code != codes.Unavailable && code != codes.Canceled {
			t.Errorf("forcibly stopped gRPC call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gRPC call still running after forced stop")
	}
	select {
	case <-restDone:
	case <-time.After(10 * time.Second):
		t.Fatal("REST call still running after forced close")
	}
}

// panicky is a model that panics, or returns an output its metadata does not
// declare, depending on its input.
type panicky struct{}

func (panicky) Metadata() oip.ModelMetadata {
	t := []oip.TensorMetadata{{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{-1}}}
	return oip.ModelMetadata{Name: "panicky", Versions: []string{"1"}, Platform: model.Platform, Inputs: t,
		Outputs: []oip.TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{-1}}}}
}

func (panicky) Infer(_ context.Context, in map[string]tensor.Tensor, _ oip.Parameters) ([]tensor.Tensor, error) {
	if in["INPUT0"].Data.([]int32)[0] == 0 {
		var m map[string]int
		m["boom"]++ // nil map write: a runtime panic
	}
	return []tensor.Tensor{{Name: "OUTPUT0", Datatype: tensor.FP32, Shape: []int64{1}, Data: []float32{1}}}, nil
}

func TestModelPanicIsRecovered(t *testing.T) {
	repo := model.Fixtures(fixture.Config{})
	if err := repo.Add(panicky{}); err != nil {
		t.Fatal(err)
	}
	srv := startWith(t, repo)
	c := dial(t, srv.GRPCAddr())
	for _, v := range []string{"0", "1"} { // 0 panics, 1 returns a bad output
		for range 3 {
			r := post(t, srv.HTTPURL()+"/v2/models/panicky/infer", `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[`+v+`]}]}`)
			wantError(t, r, http.StatusInternalServerError, "panicky")
			_, err := c.ModelInfer(ctxT(t), &inferencepb.ModelInferRequest{ModelName: "panicky",
				Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", []int64{1}, int32(v[0]-'0'))}})
			wantCode(t, err, codes.Internal, "panicky")
		}
	}
	if r := get(t, srv.HTTPURL()+"/v2/health/live"); r.status != http.StatusOK {
		t.Fatalf("live after panics: %d", r.status)
	}
	if r := post(t, srv.HTTPURL()+"/v2/models/add_sub/infer", addSubJSON); r.status != http.StatusOK {
		t.Fatalf("add_sub after panics: %d %s", r.status, r.body)
	}
}

// metricValues parses the exposition into series → value.
func metricValues(t *testing.T, text string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

func TestMetrics(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	r := get(t, base+"/metrics")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %q", r.status, r.header.Get("Content-Type"))
	}
	// The three Go runtime families (TestMetricsGoRuntime) and the gauge.
	if m := metricValues(t, string(r.body)); m["oip_inflight_requests"] != 0 || len(m) != 4 {
		t.Fatalf("fresh server metrics: %v", m)
	}

	for range 2 {
		post(t, base+"/v2/models/add_sub/infer", addSubJSON)
	}
	post(t, base+"/v2/models/add_sub/infer", `{}`)
	post(t, base+"/v2/models/no_such_model/infer", addSubJSON)
	post(t, base+"/v2/models/versioned/versions/2/infer", `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)
	get(t, base+"/v2/health/live") // not an inference: not counted
	c := dial(t, srv.GRPCAddr())
	pb, _ := oip.ToProtoRequest(addSubRequest(), true)
	if _, err := c.ModelInfer(ctxT(t), pb); err != nil {
		t.Fatal(err)
	}
	c.ModelInfer(ctxT(t), &inferencepb.ModelInferRequest{ModelName: "add_sub"})
	c.ModelInfer(ctxT(t), &inferencepb.ModelInferRequest{ModelName: "nope"})

	text := string(get(t, base+"/metrics").body)
	m := metricValues(t, text)
	for series, want := range map[string]float64{
		`oip_requests_total{model="add_sub",protocol="rest",code="200"}`:                 2,
		`oip_requests_total{model="add_sub",protocol="rest",code="400"}`:                 1,
		`oip_requests_total{model="",protocol="rest",code="404"}`:                        1,
		`oip_requests_total{model="versioned",protocol="rest",code="200"}`:               1,
		`oip_requests_total{model="add_sub",protocol="grpc",code="OK"}`:                  1,
		`oip_requests_total{model="add_sub",protocol="grpc",code="INVALID_ARGUMENT"}`:    1,
		`oip_requests_total{model="",protocol="grpc",code="NOT_FOUND"}`:                  1,
		`oip_request_duration_seconds_count{model="add_sub",protocol="rest"}`:            3,
		`oip_request_duration_seconds_bucket{model="add_sub",protocol="rest",le="+Inf"}`: 3,
		`oip_request_duration_seconds_count{model="add_sub",protocol="grpc"}`:            2,
		`oip_inflight_requests`: 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if s := m[`oip_request_duration_seconds_sum{model="add_sub",protocol="rest"}`]; s <= 0 {
		t.Errorf("duration sum %v", s)
	}
	// Buckets are cumulative and ordered.
	prev := -1.0
	for _, le := range []string{"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
		v, ok := m[`oip_request_duration_seconds_bucket{model="add_sub",protocol="rest",le="`+le+`"}`]
		if !ok || v < prev {
			t.Fatalf("bucket le=%s = %v (present %v) after %v", le, v, ok, prev)
		}
		prev = v
	}
	// The output is deterministic, but for the Go runtime's families (the
	// process's goroutines and heap change by themselves).
	withoutGo := func(s string) string { return regexp.MustCompile(`(?m)^go_\w+ \S+$`).ReplaceAllString(s, "") }
	if again := string(get(t, base+"/metrics").body); withoutGo(again) != withoutGo(text) {
		t.Errorf("metrics changed without requests:\n%s\n---\n%s", text, again)
	}
}

// TestDisabledProtocols starts REST only and gRPC only.
func TestDisabledProtocols(t *testing.T) {
	restOnly := referencetest.Start(t, func(c *reference.Config) { c.GRPCAddr = "" })
	if restOnly.GRPCAddr() != "" || restOnly.HTTPURL() == "" {
		t.Fatalf("REST only: %q %q", restOnly.HTTPURL(), restOnly.GRPCAddr())
	}
	grpcOnly := referencetest.Start(t, func(c *reference.Config) { c.HTTPAddr = "" })
	if grpcOnly.HTTPURL() != "" || grpcOnly.GRPCAddr() == "" {
		t.Fatalf("gRPC only: %q %q", grpcOnly.HTTPURL(), grpcOnly.GRPCAddr())
	}
	if _, err := dial(t, grpcOnly.GRPCAddr()).ServerLive(ctxT(t), &inferencepb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reference.New(reference.Config{}, nil); err == nil {
		t.Fatal("New with both protocols disabled succeeded")
	}
}

// TestServeStopsOnContext checks Serve: it serves until its context ends,
// then shuts down and returns nil.
func TestServeStopsOnContext(t *testing.T) {
	cfg := reference.DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	srv, err := reference.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	for srv.HTTPAddr() == "" {
		time.Sleep(time.Millisecond)
	}
	if r := get(t, srv.HTTPURL()+"/v2/health/live"); r.status != http.StatusOK {
		t.Fatalf("live: %d", r.status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// renamed serves a fixture under another name.
type renamed struct {
	model.Model
	name string
}

func (r renamed) Metadata() oip.ModelMetadata {
	md := r.Model.Metadata()
	md.Name = r.name
	return md
}

// TestModelNamesWithSpecialCharacters checks that a model name is one path
// segment taken verbatim: dots, dashes and escaped slashes included, and
// "%2F" alone, which net/http's ServeMux would take for a trailing slash.
func TestModelNamesWithSpecialCharacters(t *testing.T) {
	repo := model.NewRepository()
	for _, name := range []string{"my.model-v1.2", "a/b", "/", "ready", "versions"} {
		if err := repo.Add(renamed{fixture.NewIdentity(tensor.Int32), name}); err != nil {
			t.Fatal(err)
		}
	}
	srv := startWith(t, repo)
	body := `{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"INT32","data":[7,8]}]}`
	for _, c := range []struct{ path, name string }{
		{"my.model-v1.2", "my.model-v1.2"},
		{"a%2Fb", "a/b"},
		{"%2F", "/"},
		{"ready", "ready"},
		{"versions", "versions"},
	} {
		var ready struct{ Name string }
		wantJSON(t, get(t, srv.HTTPURL()+"/v2/models/"+c.path+"/ready"), http.StatusOK, &ready)
		var md oip.ModelMetadata
		wantJSON(t, get(t, srv.HTTPURL()+"/v2/models/"+c.path+"/versions/1"), http.StatusOK, &md)
		r := post(t, srv.HTTPURL()+"/v2/models/"+c.path+"/infer", body)
		resp, err := oip.DecodeRESTResponse(r.body, -1)
		if r.status != http.StatusOK || err != nil || resp.Model != c.name || ready.Name != c.name || md.Name != c.name {
			t.Errorf("%s: ready %q, metadata %q, infer %d %s", c.path, ready.Name, md.Name, r.status, r.body)
		}
	}
	if r := get(t, srv.HTTPURL()+"/v2/%2F"); r.status != http.StatusNotFound {
		t.Errorf("GET /v2/%%2F: %d %s, want 404 (it is not /v2/)", r.status, r.body)
	}
}
