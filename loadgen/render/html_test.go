package render

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"

	"github.com/oipkit/oipkit/client"
)

// syntheticSweep is a three-level sweep result with errors, built without
// a server.
func syntheticSweep() *loadgen.Result {
	cfg := loadgen.Config{Target: loadgen.TargetConfig{GRPC: "127.0.0.1:1", Protocol: client.ProtocolGRPCRaw, Model: "m", Timeout: loadgen.Duration(time.Second)},
		Load: loadgen.LoadConfig{ConcurrencyRange: loadgentest.Levels("1:4:x2"), Duration: loadgen.Duration(time.Second), Interval: loadgen.Duration(time.Second)},
		SLO:  nil, Thresholds: loadgentest.Thresholds("p99<3ms"), Percentile: 99}
	r := loadgen.NewResult(cfg)
	r.EndReason = loadgen.EndCompleted
	for i, c := range []int{1, 2, 4} {
		s := loadgen.Step{Kind: loadgen.StepLevel, Concurrency: c, Start: float64(i), Duration: loadgen.Duration(time.Second), Elapsed: loadgen.Duration(time.Second),
			Histograms: loadgen.Histograms{Response: loadgen.NewHistogram(), Service: loadgen.NewHistogram(), SendLag: loadgen.NewHistogram(), Failed: loadgen.NewHistogram()}}
		for v := int64(1); v <= 1000; v++ {
			lat := v * int64(c) * int64(time.Microsecond)
			s.Histograms.Response.Record(lat)
			s.Histograms.Service.Record(lat)
			r.Histograms.Response.Record(lat)
			r.Histograms.Service.Record(lat)
		}
		s.Counts = loadgen.Counts{Sent: 1000, Completed: 1000, OK: 1000}
		s.Rates.Completed = float64(1000 * c)
		s.Latency = loadgen.SummarizeAll(s.Histograms)
		r.Steps = append(r.Steps, s)
		r.Intervals = append(r.Intervals, loadgen.IntervalStats{Start: float64(i), Length: 1, Step: i, Completed: 1000, OK: 1000,
			Rate: float64(1000 * c), ResponseP50: 500 * int64(c) * 1000, ResponseP90: 900 * int64(c) * 1000,
			ResponseP99: 990 * int64(c) * 1000, ResponseMax: 1000 * int64(c) * 1000})
	}
	r.Counts = loadgen.Counts{Sent: 3002, Completed: 3002, OK: 3000, Errors: 2}
	r.Errors = map[string]int64{"http_503": 2}
	r.ErrorSamples = map[string][]string{"http_503": {"<script>alert(1)</script> overloaded"}}
	r.Duration, r.Elapsed = loadgen.Duration(3*time.Second), loadgen.Duration(3*time.Second)
	r.Rates.Completed = 1000
	r.Summarize()
	return r
}

// chartsOf decodes the chart specs a page embeds.
func chartsOf(t *testing.T, page string) []map[string]any {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script id="oipkit-charts" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no chart data in the page")
	}
	var charts []map[string]any
	if err := json.Unmarshal([]byte(m[1]), &charts); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	return charts
}

func TestHTMLReport(t *testing.T) {
	r := syntheticSweep()
	loadgen.EvaluateThresholds(r, r.Config.Thresholds)
	var b bytes.Buffer
	if err := NewHTMLReporter(r)(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<!DOCTYPE html>", "Levels", "knee", "Response time per interval", "Percentile spectrum",
		"Throughput / latency curve", "p99&lt;3ms", "failed at c=4", "Permission is hereby granted", "&lt;script&gt;alert(1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("an error message from the server reached the page unescaped")
	}
	if strings.Contains(page, "Server-side breakdown") {
		t.Error("a result without a server breakdown shows the section")
	}
	if regexp.MustCompile(`(?i)(src|href)="https?://`).MatchString(strings.ReplaceAll(page, `href="https://github.com/leeoniya/uPlot"`, "")) {
		t.Error("the page loads something from the network")
	}
	charts := chartsOf(t, page)
	ids := map[string]bool{}
	for _, c := range charts {
		id := c["id"].(string)
		ids[id] = true
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("chart %s has no element", id)
		}
	}
	if len(charts) != 4 || !ids["r0-curve"] || !ids["r0-spectrum"] {
		t.Errorf("charts %v", ids)
	}
	for _, c := range charts {
		if c["id"] == "r0-curve" {
			pts, _ := c["points"].([]any)
			lines, _ := c["lines"].([]any)
			if len(pts) != 1 || len(lines) != 1 {
				t.Errorf("curve: knee points %v, SLO/threshold lines %v", pts, lines)
			}
		}
	}
}

// The server-side breakdown is the hook for the statistics a later issue
// adds: a result that carries one shows it, beside the client's time.
func TestHTMLServerBreakdown(t *testing.T) {
	r := syntheticSweep()
	r.Server = &loadgen.ServerBreakdown{Source: "statistics extension", Requests: 3000, Components: []loadgen.ServerComponent{
		{Name: "queue", Count: 3000, TotalNs: 3000 * 100_000}, {Name: "compute_infer", Count: 3000, TotalNs: 3000 * 400_000}}}
	var b, txt bytes.Buffer
	if err := NewHTMLReporter(r)(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Server-side breakdown", "statistics extension", "queue 100µs", "compute_infer 400µs", "network and client"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if err := NewTextReporter(r)(&txt); err != nil || !strings.Contains(txt.String(), "server-side breakdown (statistics extension, 3000 requests)") ||
		!strings.Contains(txt.String(), "compute_infer") {
		t.Errorf("text:\n%s", txt.String())
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := loadgen.ReadResult(&js)
	if err != nil || back.Server == nil || back.Server.Components[1].Mean() != 400*time.Microsecond {
		t.Errorf("the breakdown does not survive JSON: %v %+v", err, back.Server)
	}
}

func TestHTMLComparison(t *testing.T) {
	a, b := syntheticSweep(), syntheticSweep()
	b.Config.Target.Protocol = client.ProtocolHTTP
	var out bytes.Buffer
	if err := NewComparisonHTMLReporter([]*loadgen.Result{a, b}, []string{"A run", "B run"})(&out); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{"2 runs compared", "The runs differ in: protocol", "A run", "B run", `id="spectrum"`, `id="curve"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, c := range chartsOf(t, page) {
		if c["id"] == "spectrum" && len(c["series"].([]any)) != 2 {
			t.Errorf("spectrum overlays %d series, want one per run", len(c["series"].([]any)))
		}
	}
	if err := NewComparisonHTMLReporter([]*loadgen.Result{a}, nil)(&out); err == nil {
		t.Error("labels missing: no error")
	}
}

func TestFormatsAreDefinedOnce(t *testing.T) {
	if got := FormatNames(); got != "text, json, csv, summary-csv, hgrm or html" {
		t.Errorf("FormatNames = %q", got)
	}
	r := syntheticSweep()
	for _, f := range Formats {
		var b bytes.Buffer
		if err := f.New(r)(&b); err != nil || b.Len() == 0 {
			t.Errorf("format %s: %v, %d bytes", f.Name, err, b.Len())
		}
	}
	if _, err := FormatNamed("xml"); err == nil || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("unknown format: %v", err)
	}
	var csv bytes.Buffer
	_ = NewSummaryCSVReporter(r)(&csv)
	if lines := strings.Count(csv.String(), "\n"); lines != 4 {
		t.Errorf("summary CSV of a 3-level sweep has %d lines, want a header and one per level:\n%s", lines, csv.String())
	}
}

// syntheticStream adds streaming histograms (and the server's stream
// timings) to a synthetic result.
func syntheticStream(r *loadgen.Result, scale int64) *loadgen.Result {
	h := &r.Histograms
	h.FirstResponse, h.InterResponse, h.ResponsesPerRequest = loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()
	for v := int64(1); v <= 500; v++ {
		h.FirstResponse.Record(scale * (5_000_000 + v*1000))
		for range 15 {
			h.InterResponse.Record(scale * (4_900_000 + v*400))
		}
		h.ResponsesPerRequest.Record(16)
	}
	r.Server = &loadgen.ServerBreakdown{Source: "statistics extension", Requests: 500, Stream: &loadgen.ServerStream{
		FirstResponse: loadgen.ServerComponent{Name: "first_response", Count: 500, TotalNs: 500 * scale * 5_100_000},
		InterResponse: loadgen.ServerComponent{Name: "inter_response", Count: 7500, TotalNs: 7500 * scale * 5_000_000}}}
	r.Summarize()
	return r
}

// A streaming result's page draws the time-to-first-response and gap
// spectra and the server's stream timings beside the client's; a
// comparison overlays each across the runs that streamed.
func TestHTMLStreaming(t *testing.T) {
	r := syntheticStream(syntheticSweep(), 1)
	var b bytes.Buffer
	if err := NewHTMLReporter(r)(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`id="r0-stream"`, "Stream timing: server and client", "time to first response", "inter-response gap", "5.10ms", "client − server"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	found := false
	for _, c := range chartsOf(t, page) {
		if c["id"] == "r0-stream" {
			found = true
			if s := c["series"].([]any); len(s) != 2 {
				t.Errorf("stream chart has %d series, want 2", len(s))
			}
		}
	}
	if !found {
		t.Error("no stream chart")
	}

	plain := syntheticSweep()
	var cmp bytes.Buffer
	if err := NewComparisonHTMLReporter([]*loadgen.Result{r, syntheticStream(syntheticSweep(), 2), plain}, []string{"A", "B", "C"})(&cmp); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range chartsOf(t, cmp.String()) {
		if c["id"] == "stream-first" || c["id"] == "stream-gap" {
			n++
			s := c["series"].([]any)
			if len(s) != 3 || !strings.Contains(s[2].(map[string]any)["label"].(string), "no streamed responses") {
				t.Errorf("%s overlays %v, want the 3 runs, the last marked as not streaming", c["id"], s)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d stream overlays, want 2", n)
	}
	// A run without streaming gets no stream chart.
	b.Reset()
	if err := NewHTMLReporter(plain)(&b); err != nil || strings.Contains(b.String(), `-stream"`) {
		t.Errorf("a run without streaming has a stream chart (%v)", err)
	}
}
