package oiptarget

import (
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"
	"github.com/oipkit/oipkit/loadgen/merge"

	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// tokensInput writes an input-data file asking the tokens fixture for n
// responses.
func tokensInput(t testing.TB, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(p, []byte(`{"data":[{"INPUT0":[`+strconv.Itoa(n)+`]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tokensConfig streams the tokens fixture: n responses each, the first
// after first, the others interval apart (the fixture's parameters).
func tokensConfig(t testing.TB, addr string, n int, first, interval time.Duration) loadgen.Config {
	cfg := grpcConfig(addr, "tokens")
	cfg.Streaming = &loadgen.StreamConfig{}
	cfg.Inputs.File = tokensInput(t, n)
	cfg.Inputs.Parameters = []string{
		"first_token_ms=" + strconv.Itoa(int(first/time.Millisecond)),
		"interval_ms=" + strconv.Itoa(int(interval/time.Millisecond)),
	}
	return cfg
}

// checkStreamResult checks what every streaming run of requests that each
// got n responses must show, whatever the timing: the counts, one TTFT per
// request, n-1 gaps per request, and the server's schedule as lower bounds
// (it cannot answer before first, nor space n responses by less than
// (n-1)·interval in all), and the gaps' agreement with the first and last
// response times. No upper bound on a time: this machine is shared.
func checkStreamResult(t *testing.T, res *loadgen.Result, n int64, first, interval time.Duration) {
	t.Helper()
	c := res.Counts
	h := res.Histograms
	if c.OK == 0 || c.Errors+c.Timeouts != 0 {
		t.Fatalf("counts %+v, errors %v %v", c, res.Errors, res.ErrorSamples)
	}
	if c.Responses != n*c.OK {
		t.Errorf("responses %d, want %d × %d", c.Responses, n, c.OK)
	}
	if h.FirstResponse.Count() != c.OK || h.ResponsesPerRequest.Count() != c.OK {
		t.Errorf("first-response count %d, per-request count %d, want %d", h.FirstResponse.Count(), h.ResponsesPerRequest.Count(), c.OK)
	}
	if got := h.InterResponse.Count(); got != (n-1)*c.OK {
		t.Errorf("%d gaps, want %d", got, (n-1)*c.OK)
	}
	if mn, mx := h.ResponsesPerRequest.Min(), h.ResponsesPerRequest.Max(); int64(mn) != n || int64(mx) != n {
		t.Errorf("responses per request %d..%d, want %d", mn, mx, n)
	}
	if got := h.FirstResponse.Min(); got < first {
		t.Errorf("time to first response min %v, below the server's first-token delay %v", got, first)
	}
	if h.FirstResponse.Max() > h.Response.Max() || h.FirstResponse.Quantile(50) > h.Response.Quantile(50) {
		t.Errorf("time to first response (p50 %v, max %v) above time to last (p50 %v, max %v)",
			h.FirstResponse.Quantile(50), h.FirstResponse.Max(), h.Response.Quantile(50), h.Response.Max())
	}
	// Each request's n-1 gaps add up to its time from the first response to
	// the last, and the request completes at or after its last response
	// (the stream's end may come a little later, more so under the race
	// detector): so the mean time to last minus the mean time to first is
	// at least the gaps' sum, up to the histograms' 0.1% precision, and
	// short of one more gap. A gap lost or counted twice per request moves
	// the sum by a whole interval, outside both bounds.
	last, firstR := float64(h.Response.Mean()), float64(h.FirstResponse.Mean())
	gaps := float64(h.InterResponse.Mean()) * float64(n-1)
	if diff := last - firstR - gaps; diff < -(0.002*last+1000) || diff > float64(interval)/2 {
		t.Errorf("mean time to last %.0f ns - mean time to first %.0f ns = %.0f ns, but %d gaps of mean %.0f ns make %.0f ns",
			last, firstR, last-firstR, n-1, float64(h.InterResponse.Mean()), gaps)
	}
	if want := first + time.Duration(n-1)*interval; h.Response.Min() < want*99/100 {
		t.Errorf("time to last response min %v, below the server's schedule %v", h.Response.Min(), want)
	}
	if res.Rates.Responses <= 0 || res.Latency.FirstResponse == nil || res.Latency.InterResponse == nil {
		t.Errorf("rates %+v, latency summaries %+v", res.Rates, res.Latency)
	}
}

func TestStreamingGRPCTokens(t *testing.T) {
	srv := referencetest.Start(t)
	const n, first, interval = 8, 20 * time.Millisecond, 4 * time.Millisecond
	t.Run("closed", func(t *testing.T) {
		cfg := tokensConfig(t, srv.GRPCAddr(), n, first, interval)
		cfg.Load.Concurrency, cfg.Load.Requests = 3, 30
		res := runConfig(t, cfg)
		checkStreamResult(t, res, n, first, interval)
		if res.Counts.OK != 30 {
			t.Errorf("ok %d, want 30", res.Counts.OK)
		}
	})
	t.Run("open", func(t *testing.T) {
		cfg := tokensConfig(t, srv.GRPCAddr(), n, first, interval)
		cfg.Load.Rate, cfg.Load.Requests = loadgentest.Rate("100"), 30
		res := runConfig(t, cfg)
		checkStreamResult(t, res, n, first, interval)
	})
	t.Run("grpc-typed", func(t *testing.T) {
		cfg := tokensConfig(t, srv.GRPCAddr(), n, first, interval)
		cfg.Target.Protocol = client.ProtocolGRPC
		cfg.Load.Concurrency, cfg.Load.Requests = 2, 6
		checkStreamResult(t, runConfig(t, cfg), n, first, interval)
	})
}

// TestStreamingOutputs checks that the JSON result round-trips and merges
// with its streaming histograms, and that the text and CSV renderings show
// them.
func TestStreamingOutputs(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := tokensConfig(t, srv.GRPCAddr(), 3, time.Millisecond, time.Millisecond)
	cfg.Load.Concurrency, cfg.Load.Requests = 2, 10
	res := runConfig(t, cfg)
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := loadgen.ReadResult(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Histograms.InterResponse.Equal(res.Histograms.InterResponse) || !back.Histograms.FirstResponse.Equal(res.Histograms.FirstResponse) {
		t.Errorf("streaming histograms differ after a JSON round trip")
	}
	m, err := merge.Merge(res, back)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.Responses != 2*res.Counts.Responses || m.Histograms.InterResponse.Count() != 2*res.Histograms.InterResponse.Count() ||
		m.Histograms.FirstResponse.Count() != 2*res.Histograms.FirstResponse.Count() {
		t.Errorf("merged responses %d, gaps %d: want twice %d, %d", m.Counts.Responses, m.Histograms.InterResponse.Count(),
			res.Counts.Responses, res.Histograms.InterResponse.Count())
	}
	// How the formats show it: render's TestFormatsShowStreaming.
}

// TestStreamingSegmentsMerge runs a streaming test as two segments and
// checks that the merged result holds both segments' streaming histograms.
func TestStreamingSegmentsMerge(t *testing.T) {
	srv := referencetest.Start(t)
	var parts []*loadgen.Result
	for i := range 2 {
		cfg := tokensConfig(t, srv.GRPCAddr(), 2, time.Millisecond, time.Millisecond)
		cfg.Load.Concurrency, cfg.Load.Duration = 2, loadgen.Duration(500*time.Millisecond)
		cfg.Load.Segment = &loadgen.Segment{Index: i, Count: 2}
		parts = append(parts, runConfig(t, cfg))
	}
	m, err := merge.Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	want := parts[0].Histograms.InterResponse.Count() + parts[1].Histograms.InterResponse.Count()
	if m.Histograms.InterResponse == nil || m.Histograms.InterResponse.Count() != want || want == 0 {
		t.Fatalf("merged gaps %v, want %d", m.Histograms.InterResponse, want)
	}
	var ivResponses int64
	for _, iv := range m.Intervals {
		ivResponses += iv.Responses
	}
	if ivResponses != m.Counts.Responses {
		t.Errorf("merged intervals hold %d responses, the result %d", ivResponses, m.Counts.Responses)
	}
}

func TestStreamingErrorsOnTheStream(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := grpcConfig(srv.GRPCAddr(), "tokens")
	cfg.Streaming = &loadgen.StreamConfig{}
	cfg.Inputs.File = tokensInput(t, -1) // refused in error_message
	cfg.Load.Concurrency, cfg.Load.Requests = 2, 8
	res := runConfig(t, cfg)
	if res.Counts.Errors != 8 || res.Errors["stream_error"] != 8 {
		t.Fatalf("errors %v (counts %+v), want 8 stream_error", res.Errors, res.Counts)
	}
	if s := res.ErrorSamples["stream_error"]; len(s) == 0 || !strings.Contains(s[0], "INPUT0") {
		t.Errorf("samples %q, want the server's message", s)
	}
	if res.Histograms.FirstResponse.Count() != 0 {
		t.Errorf("failed requests recorded %d first responses", res.Histograms.FirstResponse.Count())
	}
}

// misbehaving is a decoupled model that never sends a final response:
// drip sends one response per gap for ever, flood as fast as the stream
// takes them, silent none at all.
type misbehaving struct {
	name string
	gap  time.Duration
	none bool
}

func (m misbehaving) Metadata() oip.ModelMetadata {
	md := fixture.NewStreamCount().Metadata()
	md.Name = m.name
	return md
}

func (m misbehaving) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, model.ErrInvalidInput
}

func (m misbehaving) InferStream(ctx context.Context, _ map[string]tensor.Tensor, _ oip.Parameters, send func([]tensor.Tensor, bool) error) error {
	if m.none {
		<-ctx.Done()
		return ctx.Err()
	}
	out := []tensor.Tensor{{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{1}}}
	for ctx.Err() == nil {
		if err := send(out, false); err != nil {
			return err
		}
		if m.gap > 0 {
			time.Sleep(m.gap)
		}
	}
	return ctx.Err()
}

func startMisbehaving(t *testing.T, models ...model.Model) string {
	t.Helper()
	repo := model.NewRepository()
	for _, m := range models {
		if err := repo.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	return referencetest.StartRepo(t, repo, func(c *reference.Config) { c.HTTPAddr = "" }).GRPCAddr()
}

// TestStreamingNeverEnding: a stream that drips, floods or stays silent
// without ever sending its final response ends each request at the
// timeout, counted as a timeout, and the run ends on time.
func TestStreamingNeverEnding(t *testing.T) {
	addr := startMisbehaving(t, misbehaving{name: "drip", gap: 20 * time.Millisecond},
		misbehaving{name: "flood"}, misbehaving{name: "silent", none: true})
	for _, name := range []string{"drip", "flood", "silent"} {
		t.Run(name, func(t *testing.T) {
			cfg := grpcConfig(addr, name)
			cfg.Streaming = &loadgen.StreamConfig{}
			cfg.Inputs.Data = "zero"
			cfg.Target.Timeout = loadgen.Duration(300 * time.Millisecond)
			cfg.Load.Concurrency, cfg.Load.Requests = 2, 4
			start := time.Now()
			res := runConfig(t, cfg)
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("the run took %v", el)
			}
			if res.Counts.Timeouts != 4 {
				t.Fatalf("counts %+v, errors %v %v: want 4 timeouts", res.Counts, res.Errors, res.ErrorSamples)
			}
			if name != "silent" && res.Counts.Responses == 0 {
				t.Errorf("no responses counted")
			}
			if s := res.ErrorSamples["timeout"]; len(s) == 0 || !strings.Contains(s[0], "not complete within 300ms") {
				t.Errorf("samples %q", s)
			}
		})
	}
}

// unaryTarget answers every request at once, and does not stream.
type unaryTarget struct{}

func (unaryTarget) Do(context.Context, uint64) error { return nil }

func TestStreamingConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  loadgen.Config
		want string
	}{
		{loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{Responses: -1}}, "Streaming.Responses"},
		{loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Inputs: loadgen.InputConfig{Validate: true}, Streaming: &loadgen.StreamConfig{}}, "Inputs.Validate"},
		{loadgen.Config{Target: loadgen.TargetConfig{HTTP: "h:1", Model: "m", Protocol: client.ProtocolHTTPBinary}, Streaming: &loadgen.StreamConfig{}}, "Target.Protocol http"},
		{loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{TextInput: "x"}}, "Streaming.TextInput"},
		{loadgen.Config{Target: loadgen.TargetConfig{HTTP: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{Responses: 2}}, "gRPC streams"},
	} {
		err := Normalize(&c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line naming %s", c.cfg.Streaming, err, c.want)
		}
	}
	if _, err := loadgen.Run(context.Background(), unaryTarget{}, loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Streaming: &loadgen.StreamConfig{}}); err == nil {
		t.Errorf("a target that does not stream ran a streaming configuration")
	}
}

// TestStreamingCoordinatedOmission stalls the stream fixture's server for
// 600 ms: in an open loop the requests due during the stall wait, and
// their time to first response (from the intended start) shows it.
func TestStreamingCoordinatedOmission(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 2s")
	}
	g := &gate{}
	addr := startMisbehaving(t, gatedStream{fixture.NewTokens(time.Millisecond), g})
	cfg := grpcConfig(addr, "tokens")
	cfg.Streaming = &loadgen.StreamConfig{}
	cfg.Inputs.File = tokensInput(t, 2)
	cfg.Load.Rate, cfg.Load.Duration = loadgentest.Rate("100"), loadgen.Duration(2*time.Second)
	var once sync.Once
	cfg.Progress = func(loadgen.IntervalStats) { once.Do(func() { go g.pause(600 * time.Millisecond) }) }
	res := runConfig(t, cfg)
	if p := res.Histograms.FirstResponse.Quantile(99); p < 300*time.Millisecond {
		t.Errorf("open-loop time to first response p99 %v: a 600ms stall must show", p)
	}
}

type gatedStream struct {
	model.Decoupled
	g *gate
}

func (m gatedStream) InferStream(ctx context.Context, in map[string]tensor.Tensor, p oip.Parameters, send func([]tensor.Tensor, bool) error) error {
	m.g.mu.RLock()
	m.g.mu.RUnlock() //nolint:staticcheck // an empty critical section: wait while paused
	return m.Decoupled.InferStream(ctx, in, p, send)
}

func TestStreamMessageScan(t *testing.T) {
	// Zero allocations reading a response: the hot path's promise.
	b := encodeStreamResponse(t, "17", true, "")
	var m streamMessage
	if a := testing.AllocsPerRun(100, func() { _ = m.scan(b) }); a != 0 {
		t.Errorf("scan allocates %v per response", a)
	}
	if err := m.scan(b); err != nil || string(m.id) != "17" || !m.final || !m.finalKnown || !m.outputs {
		t.Errorf("scan = %+v, %v", m, err)
	}
	if err := m.scan(encodeStreamResponse(t, "", false, "boom")); err != nil || string(m.errMsg) != "boom" || m.final || !m.finalKnown {
		t.Errorf("scan = %+v, %v", m, err)
	}
	if err := m.scan([]byte{0x12, 0x05, 0x1a}); err == nil {
		t.Errorf("a truncated message scanned")
	}
}

func encodeStreamResponse(t *testing.T, id string, final bool, errMsg string) []byte {
	t.Helper()
	m := &inferencepb.ModelStreamInferResponse{ErrorMessage: errMsg, InferResponse: &inferencepb.ModelInferResponse{
		ModelName: "tokens", Id: id,
		Parameters: map[string]*inferencepb.InferParameter{
			"other":                      {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "x"}},
			oip.ParamTritonFinalResponse: {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: final}},
		},
	}}
	if errMsg == "" {
		m.InferResponse.Outputs = []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1}}}
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStreamingRESTGenerate(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: srv.HTTPURL(), Model: "text_gen"}, Streaming: &loadgen.StreamConfig{},
		Load: loadgen.LoadConfig{Concurrency: 2, Requests: 10}}
	res := runConfig(t, cfg)
	words := int64(len(strings.Fields(DefaultPrompt)))
	c := res.Counts
	if c.OK != 10 || c.Responses != 10*words || res.Histograms.InterResponse.Count() != 10*(words-1) || res.Histograms.FirstResponse.Count() != 10 {
		t.Fatalf("counts %+v, gaps %d, errors %v: want 10 requests of %d events", c, res.Histograms.InterResponse.Count(), res.ErrorSamples, words)
	}
	if res.Histograms.FirstResponse.Max() > res.Histograms.Response.Max() {
		t.Errorf("time to first response above time to last")
	}

	cfg.Streaming = &loadgen.StreamConfig{TextInput: "one two three four"}
	cfg.Inputs.Parameters = []string{fixture.ParamFailAfter + "=2"}
	res = runConfig(t, cfg)
	if res.Errors["stream_error"] != 10 || res.Counts.Responses != 20 {
		t.Errorf("errors %v, responses %d: want 10 stream errors after 2 events each", res.Errors, res.Counts.Responses)
	}

	cfg.Inputs.Parameters = []string{fixture.ParamMaxTokens + "=0"}
	res = runConfig(t, cfg)
	if res.Errors["http_400"] != 10 {
		t.Errorf("errors %v %v: want 10 http_400", res.Errors, res.ErrorSamples)
	}
}

func TestStreamingThresholds(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := tokensConfig(t, srv.GRPCAddr(), 3, 20*time.Millisecond, time.Millisecond)
	cfg.Load.Concurrency, cfg.Load.Requests = 1, 3
	cfg.Thresholds = loadgentest.Thresholds("first_response_p50>=20ms", "first_response_min<10ms", "p(99)<10s", "inter_response_max<10s")
	res := runConfig(t, cfg)
	got := map[string]bool{}
	for _, th := range cfg.Thresholds {
		got[th.String()] = th.Eval(res).Pass
	}
	if !got["first_response_p50>=20ms"] || got["first_response_min<10ms"] || !got["inter_response_max<10s"] {
		t.Errorf("verdicts %v (first response p50 %v)", got, res.Histograms.FirstResponse.Quantile(50))
	}
	bad := loadgen.Config{Target: loadgen.TargetConfig{GRPC: "h:1", Model: "m"}, Thresholds: loadgentest.Thresholds("first_response_p99<1s")}
	if err := Normalize(&bad); err == nil || !strings.Contains(err.Error(), "Config.Streaming") {
		t.Errorf("a first_response threshold without --streaming: %v", err)
	}
}

// An encoded request with emptyFinalParam appended decodes with
// triton_enable_empty_final_response=true beside its own parameters.
func TestEmptyFinalParam(t *testing.T) {
	req := &inferencepb.ModelInferRequest{ModelName: "stream_count", Parameters: map[string]*inferencepb.InferParameter{
		"x": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 7}}}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got inferencepb.ModelInferRequest
	if err := proto.Unmarshal(append(b, emptyFinalParam...), &got); err != nil {
		t.Fatal(err)
	}
	p := got.GetParameters()
	if !p[oip.ParamTritonEnableEmptyFinalResponse].GetBoolParam() || p["x"].GetInt64Param() != 7 || got.GetModelName() != "stream_count" {
		t.Errorf("decoded %v", &got)
	}
}
