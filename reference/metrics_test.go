package reference_test

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// metricValue reads one series of /metrics (labels written as the server
// writes them); -1 when it is absent.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// Triton's families agree with the statistics extension, and the stream
// histograms count one first response per streamed request and one gap
// per later response, over gRPC and over generate_stream.
func TestMetricsTritonFamilies(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()

	// Unary: two successes and one failure of add_sub.
	for range 2 {
		if _, r := inferREST(t, base, addSubRequest(), oip.RESTEncoding{}); r.status != http.StatusOK {
			t.Fatalf("infer: %d %s", r.status, r.body)
		}
	}
	post(t, base+inferPath("add_sub", ""), "{")

	// Streamed: three requests of 4 tokens, the first token 3 ms after
	// receipt, then 1 ms apart.
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := st.Send(countRequest("tokens", strconv.Itoa(i), 4, oip.Parameters{"interval_ms": int64(1), "first_token_ms": int64(3)})); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	got, err := recvAll(t, st)
	if err != nil || len(got) != 12 {
		t.Fatalf("tokens: %d responses, %v", len(got), err)
	}
	// generate_stream: text_gen answers one event per word.
	if r := post(t, base+"/v2/models/text_gen/generate_stream", `{"text_input":"one two three"}`); r.status != http.StatusOK {
		t.Fatalf("generate_stream: %d %s", r.status, r.body)
	}

	add := statsOf(t, base, "add_sub", "1")
	want := map[string]float64{
		`nv_inference_request_success{model="add_sub",version="1"}`:                     float64(add.InferenceStats.Success.Count),
		`nv_inference_request_failure{model="add_sub",version="1"}`:                     float64(add.InferenceStats.Fail.Count),
		`nv_inference_count{model="add_sub",version="1"}`:                               float64(add.InferenceCount),
		`nv_inference_exec_count{model="add_sub",version="1"}`:                          float64(add.ExecutionCount),
		`nv_inference_request_duration_us{model="add_sub",version="1"}`:                 float64(add.InferenceStats.Success.NS / 1000),
		`nv_inference_compute_infer_duration_us{model="add_sub",version="1"}`:           float64(add.InferenceStats.ComputeInfer.NS / 1000),
		`nv_inference_request_success{model="tokens",version="1"}`:                      3,
		`nv_inference_first_response_histogram_ms_count{model="tokens",version="1"}`:    3,
		`oip_inference_inter_response_histogram_ms_count{model="tokens",version="1"}`:   9,
		`nv_inference_request_success{model="text_gen",version="1"}`:                    1,
		`nv_inference_first_response_histogram_ms_count{model="text_gen",version="1"}`:  1,
		`oip_inference_inter_response_histogram_ms_count{model="text_gen",version="1"}`: 2,
	}
	// A request is recorded when its last response has been written, which
	// may be just after the client read it: wait for the counts to settle.
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		body = string(get(t, base+"/metrics").body)
		var wrong []string
		for series, w := range want {
			if got := metricValue(t, body, series); got != w {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", series, got, w))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s:\n%s", strings.Join(wrong, "\n"))
		}
	}
	if add.InferenceStats.Success.Count != 2 || add.InferenceStats.Fail.Count != 1 {
		t.Errorf("add_sub statistics: %+v", add.InferenceStats)
	}
	// The fixture's first token is due 3 ms after it starts, which is after
	// the receipt, so the sum is at least that (a lower bound, not a timing;
	// gaps have none: a late token shortens the next gap).
	if s := metricValue(t, body, `nv_inference_first_response_histogram_ms_sum{model="tokens",version="1"}`); s < 9 {
		t.Errorf("first response sum %v ms, want at least 3 × 3 ms", s)
	}
	if s := metricValue(t, body, `oip_inference_inter_response_histogram_ms_sum{model="tokens",version="1"}`); s <= 0 {
		t.Errorf("inter-response sum %v ms, want > 0", s)
	}
	if b := metricValue(t, body, `nv_inference_first_response_histogram_ms_bucket{model="tokens",version="1",le="+Inf"}`); b != 3 {
		t.Errorf("first response +Inf bucket %v, want 3", b)
	}
	// Non-decoupled models have no stream histograms.
	if v := metricValue(t, body, `nv_inference_first_response_histogram_ms_count{model="add_sub",version="1"}`); v != -1 {
		t.Errorf("add_sub has a first-response histogram: %v", v)
	}
	tok := statsOf(t, base, "tokens", "1")
	if tok.InferenceStats.Success.Count != 3 || tok.InferenceStats.ComputeInfer.Count != 3 {
		t.Errorf("tokens statistics after 3 streamed requests: %+v", tok.InferenceStats)
	}
}

// The Go collector's families report this process (the server runs in the
// test's): goroutines parked by the test and objects it keeps alive show
// up in go_goroutines and go_memstats_heap_objects.
func TestMetricsGoRuntime(t *testing.T) {
	srv := referencetest.Start(t)
	scrape := func() (goroutines, inuse, objects float64) {
		body := string(get(t, srv.HTTPURL()+"/metrics").body)
		return metricValue(t, body, "go_goroutines"), metricValue(t, body, "go_memstats_heap_inuse_bytes"),
			metricValue(t, body, "go_memstats_heap_objects")
	}
	g0, inuse0, _ := scrape()
	if g0 <= 0 || inuse0 <= 0 {
		t.Fatalf("go_goroutines %v, go_memstats_heap_inuse_bytes %v: want both > 0", g0, inuse0)
	}

	const parked = 500
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(parked)
	for range parked {
		go func() { started.Done(); <-release }()
	}
	started.Wait()
	g1, _, _ := scrape()
	close(release)
	// Goroutines of the first scrape's connection and the runtime's own
	// may have ended meanwhile: allow a tenth of the parked ones for them.
	if g1 < g0+parked*9/10 {
		t.Errorf("go_goroutines %v with %d more parked, want at least %v", g1, parked, g0+parked*9/10)
	}

	runtime.GC()
	_, _, objects0 := scrape()
	const kept = 200_000
	live := make([]*[16]byte, kept)
	for i := range live {
		live[i] = new([16]byte)
	}
	_, inuse1, objects1 := scrape()
	// The runtime counts allocations per span as each cache's span is
	// refilled, so the count may trail by a few spans' worth: allow 10%.
	if objects1 < objects0+kept*9/10 {
		t.Errorf("go_memstats_heap_objects %v with %d more kept alive, want at least %v", objects1, kept, objects0+kept*9/10)
	}
	if inuse1 < kept*16 {
		t.Errorf("go_memstats_heap_inuse_bytes %v with %d×16 bytes kept alive", inuse1, kept)
	}
	runtime.KeepAlive(live)
}
