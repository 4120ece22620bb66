package oiptarget

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/reference/referencetest"
)

const tritonMetrics = `# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="simple",version="1"} %d
nv_inference_request_success{model="simple",version="2"} 5
nv_inference_request_success{model="other",version="1"} 1000
nv_inference_request_failure{model="simple",reason="REJECTED",version="1"} 2
nv_inference_queue_duration_us{model="simple",version="1"} %d
nv_inference_compute_input_duration_us{model="simple",version="1"} %d
nv_inference_compute_infer_duration_us{model="simple",version="1"} %d
nv_inference_compute_output_duration_us{model="simple",version="1"} %d
nv_inference_first_response_histogram_ms_bucket{model="simple",version="1",le="+Inf"} %d
nv_inference_first_response_histogram_ms_sum{model="simple",version="1"} %g
nv_inference_first_response_histogram_ms_count{model="simple",version="1"} %d 1700000000000
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5
`

func TestParseMetrics(t *testing.T) {
	body := "# a comment\n\n" +
		`m_total{a="x\"y\\z\nw", b = "2" ,} 3.5` + "\n" +
		"plain 7 123\n" +
		`inf{le="+Inf"} +Inf` + "\n" +
		`nan NaN` + "\n"
	s, err := parseMetrics([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 4 || s[0].name != "m_total" || s[0].label("a") != "x\"y\\z\nw" || s[0].label("b") != "2" || s[0].value != 3.5 ||
		s[1].name != "plain" || s[1].value != 7 || !math.IsInf(s[2].value, 1) || !math.IsNaN(s[3].value) {
		t.Fatalf("parsed %+v", s)
	}
	// As expfmt, a value may follow the labels or the name with no blank.
	if s, err := parseMetrics([]byte("m{a=\"b\"}1\nn+2\n")); err != nil || len(s) != 2 || s[0].value != 1 || s[1].name != "n" || s[1].value != 2 {
		t.Errorf("a value with no blank before it: %+v, %v", s, err)
	}
	for _, bad := range []string{
		"{a=\"b\"} 1", "m{a=b} 1", `m{a="b} 1`, "m", "m x", "m 1 2 3", `m{a="b" c="d"} 1`, "9m 1",
	} {
		_, err := parseMetrics([]byte("ok 1\n" + bad + "\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want a one-line error naming line 2", bad, err)
		}
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte(fmt.Sprintf(tritonMetrics, 1, 2, 3, 4, 5, 6, 7.5, 8)))
	f.Add([]byte(`a{b="c\\\"",d="\n"} -Inf 1`))
	f.Add([]byte("x{} 1\n# c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseMetrics(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		for _, x := range s {
			if x.name == "" || !isNameChar(x.name[0], true) {
				t.Errorf("sample with a bad name %q", x.name)
			}
		}
		_ = modelMetricsOf(s, "simple", "")
	})
}

// metricsServer serves tritonMetrics with counters that grow by one
// request per scrape.
func metricsServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		k := n.Add(1) * 10
		fmt.Fprintf(w, tritonMetrics, k, 2*k, 3*k, 40*k, 5*k, k, 6.25*float64(k), k)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Without the statistics extension, the breakdown comes from the
// nv_inference_* counters of the model (summed over its versions, or of
// one version), and the stream timings from the first-response histogram.
func TestServerStatsFromMetrics(t *testing.T) {
	srv := metricsServer(t)
	for _, version := range []string{"1", ""} {
		tg := &OIPTarget{cfg: loadgen.TargetConfig{Model: "simple", ModelVersion: version}, metrics: newMetricsScraper(srv.URL+"/metrics", nil)}
		ctx := context.Background()
		before, err := tg.ServerStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after, err := tg.ServerStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d := after.Delta(before)
		if d == nil || d.Source != "metrics (nv_inference_*)" || d.Requests != 10 {
			t.Fatalf("version %q: delta %+v", version, d)
		}
		want := map[string]time.Duration{"queue": 2 * time.Microsecond, "compute_input": 3 * time.Microsecond,
			"compute_infer": 40 * time.Microsecond, "compute_output": 5 * time.Microsecond}
		for _, c := range d.Components {
			if c.Mean() != want[c.Name] || c.Count != 10 {
				t.Errorf("version %q: %s mean %v over %d, want %v over 10", version, c.Name, c.Mean(), c.Count, want[c.Name])
			}
		}
		if s := d.Stream; s == nil || s.FirstResponse.Count != 10 || s.FirstResponse.Mean() != 6250*time.Microsecond || s.InterResponse.Count != 0 {
			t.Errorf("version %q: stream %+v", version, d.Stream)
		}
	}
	// A model the metrics do not list: no breakdown, and the error says so.
	tg := &OIPTarget{cfg: loadgen.TargetConfig{Model: "absent"}, metrics: newMetricsScraper(srv.URL+"/metrics", nil)}
	if b, err := tg.ServerStats(context.Background()); err == nil || !strings.Contains(err.Error(), `model "absent"`) {
		t.Errorf("absent model: %+v, %v", b, err)
	}
}

// A failing, oversized, malformed or silent /metrics gives a one-line
// error and no breakdown, within the timeout.
func TestMetricsScrapeHostile(t *testing.T) {
	big := strings.Repeat("x 1\n", maxMetricsBody/4+1)
	handlers := map[string]http.HandlerFunc{
		"HTTP 500":    func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) },
		"larger than": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, big) },
		"line 1":      func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not metrics</html>\n") },
		"longer than": func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "x"+strings.Repeat("y", maxMetricsLine)+" 1\n")
		},
		"context dead":  func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"no nv_inferen": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "up 1\n") },
	}
	for want, h := range handlers {
		srv := httptest.NewServer(h)
		tg := &OIPTarget{cfg: loadgen.TargetConfig{Model: "simple"}, metrics: newMetricsScraper(srv.URL, nil)}
		timeout := 30 * time.Second
		if want == "context dead" {
			timeout = 300 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		b, err := tg.ServerStats(ctx)
		cancel()
		srv.Close()
		if err == nil || b != nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want[:min(len(want), 12)]) {
			t.Errorf("%s: breakdown %+v, error %v", want, b, err)
		}
	}
}

func TestMetricsURL(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:8002":               "http://localhost:8002/metrics",
		"localhost:8002/metrics":       "http://localhost:8002/metrics",
		"https://h:8443/custom/path":   "https://h:8443/custom/path",
		"http://127.0.0.1:8000/":       "http://127.0.0.1:8000/metrics",
		" http://127.0.0.1:8000/m?x=1": "http://127.0.0.1:8000/m?x=1",
	} {
		if got, err := MetricsURL(in); err != nil || got != want {
			t.Errorf("MetricsURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://h/metrics", "http://", "http://h:x:y/%zz"} {
		if got, err := MetricsURL(bad); err == nil {
			t.Errorf("MetricsURL(%q) = %q, want an error", bad, got)
		}
	}
}

// A streaming run with --metrics-url against the reference: the server
// timed one first response per request and every gap, over gRPC and SSE,
// and a wrong URL fails before the run.
func TestStreamingServerMetrics(t *testing.T) {
	srv := referencetest.Start(t)
	const n = 6
	cfg := tokensConfig(t, srv.GRPCAddr(), n, 2*time.Millisecond, time.Millisecond)
	cfg.Target.MetricsURL = srv.HTTPURL() + "/metrics"
	cfg.Load.Concurrency, cfg.Load.Requests = 2, 12
	res := runConfig(t, cfg)
	if res.Counts.OK != 12 || res.Server == nil || res.Server.Stream == nil {
		t.Fatalf("counts %+v, server %+v", res.Counts, res.Server)
	}
	// The server times a response once written: the first of every request
	// before its last is sent, the last gap of each request in flight at
	// the end possibly just after the client read it.
	st := res.Server.Stream
	if st.FirstResponse.Count != 12 || st.InterResponse.Count < 12*(n-1)-2 || st.InterResponse.Count > 12*(n-1) {
		t.Errorf("server timed %d first responses and %d gaps, want 12 and %d (or up to 2 fewer)", st.FirstResponse.Count, st.InterResponse.Count, 12*(n-1))
	}
	// The fixture sends its first token 2 ms after it starts: a lower
	// bound for the server's figure, which the client's includes.
	if st.FirstResponse.Mean() < 2*time.Millisecond || res.Histograms.FirstResponse.Mean() < st.FirstResponse.Mean()*99/100 {
		t.Errorf("first response: server mean %v, client mean %v", st.FirstResponse.Mean(), res.Histograms.FirstResponse.Mean())
	}
	// How the text shows it: render's TestTextShowsServerStreamTiming.

	sse := loadgen.Config{Target: loadgen.TargetConfig{HTTP: srv.HTTPURL(), Model: "text_gen", MetricsURL: srv.HTTPURL() + "/metrics"},
		Streaming: &loadgen.StreamConfig{TextInput: "a b c"}, Load: loadgen.LoadConfig{Concurrency: 1, Requests: 5}}
	res = runConfig(t, sse)
	if st := res.Server.Stream; st == nil || st.FirstResponse.Count != 5 || st.InterResponse.Count < 9 || st.InterResponse.Count > 10 {
		t.Errorf("generate_stream: server stream %+v", res.Server.Stream)
	}

	// The gRPC port given as the metrics URL: the error says so.
	cfg.Target.MetricsURL = "http://" + srv.GRPCAddr() + "/metrics"
	if tg, err := NewTarget(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "a gRPC port?") {
		if tg != nil {
			tg.Close()
		}
		t.Errorf("the gRPC port as --metrics-url: %v", err)
	}
	cfg.Target.MetricsURL = srv.HTTPURL() + "/nope"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if tg, err := NewTarget(ctx, cfg); err == nil || !strings.Contains(err.Error(), "Target.MetricsURL") || !strings.Contains(err.Error(), "404") {
		if tg != nil {
			tg.Close()
		}
		t.Errorf("a wrong --metrics-url: %v", err)
	}
}
