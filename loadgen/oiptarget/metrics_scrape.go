package oiptarget

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
)

// Reading a server's Prometheus /metrics (TargetConfig.MetricsURL, as
// perf_analyzer names it): the subset of the text exposition format that
// counters and histograms use, parsed by hand (no client library), with a
// bounded body and a timeout. Triton serves it on :8002/metrics, the
// reference server on its HTTP port at /metrics.

// maxMetricsBody bounds a /metrics answer: a server with thousands of
// models writes a few MiB; a hostile one cannot make the generator hold
// more.
const maxMetricsBody = 16 << 20

// maxMetricsLine bounds one line of a /metrics answer.
const maxMetricsLine = 64 << 10

// MetricsURL checks a Target.MetricsURL: a URL, or host:port[/path] taken as
// http://; the path defaults to /metrics.
func MetricsURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL", s)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String(), nil
}

// metricSample is one sample line: a metric name, its labels and a value.
type metricSample struct {
	name   string
	labels []metricLabel
	value  float64
}

type metricLabel struct{ name, value string }

// label returns the value of label name ("" when absent, as Prometheus
// treats it).
func (s *metricSample) label(name string) string {
	for _, l := range s.labels {
		if l.name == name {
			return l.value
		}
	}
	return ""
}

// metricsScraper GETs a /metrics URL.
type metricsScraper struct {
	url    string
	client *http.Client
}

func newMetricsScraper(rawURL string, tlsConfig *tls.Config) *metricsScraper {
	tr := &http.Transport{TLSClientConfig: tlsConfig, MaxIdleConns: 1, IdleConnTimeout: 30 * time.Second,
		ResponseHeaderTimeout: statsTimeout}
	return &metricsScraper{url: rawURL, client: &http.Client{Transport: tr, Timeout: statsTimeout}}
}

// openMetrics sets up Target.MetricsURL and reads it once, so that a wrong URL
// fails before the run rather than leaving the breakdown out.
func (t *OIPTarget) openMetrics(ctx context.Context) error {
	if t.cfg.MetricsURL == "" {
		return nil
	}
	t.metrics = newMetricsScraper(t.cfg.MetricsURL, t.tls)
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	if _, err := t.metrics.scrape(ctx); err != nil {
		return fmt.Errorf("Target.MetricsURL: %w", err)
	}
	return nil
}

func (m *metricsScraper) close() {
	if m != nil {
		m.client.CloseIdleConnections()
	}
}

// scrape reads and parses the metrics; errors are one line.
func (m *metricsScraper) scrape(ctx context.Context) ([]metricSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics %s: %v", m.url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := m.client.Do(req)
	if err != nil {
		// Not a deadline of ours: the port answered with HTTP/2 frames or
		// hung up, which comes first being a race (client.NoHTTP1Answer).
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && client.NoHTTP1Answer(err) {
			return nil, fmt.Errorf("metrics %s: the port does not answer HTTP/1.1 (a gRPC port? Triton serves metrics on :8002, oipkit serve on its HTTP port)", m.url)
		}
		return nil, fmt.Errorf("metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("metrics %s: HTTP %d %s", m.url, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody+1))
	if err != nil {
		return nil, fmt.Errorf("metrics %s: reading the answer: %v", m.url, err)
	}
	if len(body) > maxMetricsBody {
		return nil, fmt.Errorf("metrics %s: answer larger than %d MiB", m.url, maxMetricsBody>>20)
	}
	samples, err := parseMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("metrics %s: %v (want the Prometheus text format)", m.url, err)
	}
	return samples, nil
}

// parseMetrics parses the Prometheus text exposition format: comments and
// blank lines are skipped; a sample is name{label="value",...} value
// [timestamp].
func parseMetrics(body []byte) ([]metricSample, error) {
	var out []metricSample
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), maxMetricsLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("a line longer than %d KiB", maxMetricsLine>>10)
		}
		return nil, err
	}
	return out, nil
}

func isNameChar(c byte, first bool) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

func parseSample(line string) (metricSample, error) {
	var s metricSample
	i := 0
	for i < len(line) && isNameChar(line[i], i == 0) {
		i++
	}
	if i == 0 {
		return s, fmt.Errorf("no metric name at %.40q", line)
	}
	s.name = line[:i]
	rest := line[i:]
	// Blanks may come between the name and its labels (expfmt reads them).
	if r := strings.TrimLeft(rest, " \t"); strings.HasPrefix(r, "{") {
		var err error
		if s.labels, rest, err = parseLabels(r[1:]); err != nil {
			return s, fmt.Errorf("%s: %v", s.name, err)
		}
	}
	// The value may follow the name or the labels without a blank
	// ("up+1"): expfmt reads it so, and a scrape must not fail where
	// Prometheus does not.
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("%s: want a value (and an optional timestamp) after the name and labels", s.name)
	}
	v, err := parseMetricValue(fields[0])
	if err != nil {
		return s, fmt.Errorf("%s: value %.40q: %v", s.name, fields[0], err)
	}
	s.value = v
	return s, nil
}

// parseLabels parses label="value" pairs up to the closing brace (after
// the opening one) and returns what follows it.
func parseLabels(s string) ([]metricLabel, string, error) {
	var labels []metricLabel
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		i := 0
		for i < len(s) && isNameChar(s[i], i == 0) {
			i++
		}
		if i == 0 {
			return nil, "", errors.New("bad label name")
		}
		name := s[:i]
		s = strings.TrimLeft(s[i:], " \t")
		if !strings.HasPrefix(s, "=") {
			return nil, "", fmt.Errorf("label %s: want =\"value\"", name)
		}
		s = strings.TrimLeft(s[1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return nil, "", fmt.Errorf("label %s: want =\"value\"", name)
		}
		s = s[1:]
		var val strings.Builder
		closed := false
		for i = 0; i < len(s); i++ {
			c := s[i]
			if c == '"' {
				closed = true
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				case '\\', '"':
					val.WriteByte(s[i])
				default:
					val.WriteByte('\\')
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(c)
		}
		if !closed {
			return nil, "", fmt.Errorf("label %s: unterminated value", name)
		}
		labels = append(labels, metricLabel{name, val.String()})
		s = strings.TrimLeft(s[i+1:], " \t")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "}") {
			return nil, "", errors.New("want , or } after a label")
		}
	}
}

func parseMetricValue(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// modelMetrics are a model's cumulative counters on /metrics, summed over
// the label sets of the model (and of the version, when one is given):
// Triton's nv_inference_* families and the reference's inter-response
// histogram.
type modelMetrics struct {
	success, failure float64
	// Cumulative durations of successful requests, in microseconds.
	requestUs, queueUs, inputUs, inferUs, outputUs float64
	found                                          bool // any nv_inference_request_success series
	firstSumMs, firstCount                         float64
	gapSumMs, gapCount                             float64
}

// Metric family names read from /metrics.
const (
	metricSuccess       = "nv_inference_request_success"
	metricFailure       = "nv_inference_request_failure"
	metricRequestUs     = "nv_inference_request_duration_us"
	metricQueueUs       = "nv_inference_queue_duration_us"
	metricInputUs       = "nv_inference_compute_input_duration_us"
	metricInferUs       = "nv_inference_compute_infer_duration_us"
	metricOutputUs      = "nv_inference_compute_output_duration_us"
	metricFirstResponse = "nv_inference_first_response_histogram_ms"
	metricInterResponse = "oip_inference_inter_response_histogram_ms"
)

// modelMetricsOf sums the samples of model (and version, when not "").
func modelMetricsOf(samples []metricSample, model, version string) modelMetrics {
	var m modelMetrics
	for i := range samples {
		s := &samples[i]
		if !strings.HasPrefix(s.name, "nv_inference_") && !strings.HasPrefix(s.name, "oip_inference_") {
			continue
		}
		if s.label("model") != model || version != "" && s.label("version") != version {
			continue
		}
		if math.IsNaN(s.value) || math.IsInf(s.value, 0) {
			continue
		}
		switch s.name {
		case metricSuccess:
			m.success += s.value
			m.found = true
		case metricFailure:
			m.failure += s.value
		case metricRequestUs:
			m.requestUs += s.value
		case metricQueueUs:
			m.queueUs += s.value
		case metricInputUs:
			m.inputUs += s.value
		case metricInferUs:
			m.inferUs += s.value
		case metricOutputUs:
			m.outputUs += s.value
		case metricFirstResponse + "_sum":
			m.firstSumMs += s.value
		case metricFirstResponse + "_count":
			m.firstCount += s.value
		case metricInterResponse + "_sum":
			m.gapSumMs += s.value
		case metricInterResponse + "_count":
			m.gapCount += s.value
		}
	}
	return m
}

// breakdown is the statistics-like breakdown of m: successful requests
// and the cumulative queue and compute durations (which Triton counts over
// successful requests).
func (m modelMetrics) breakdown() *loadgen.ServerBreakdown {
	n := int64(m.success)
	us := func(name string, v float64) loadgen.ServerComponent {
		return loadgen.ServerComponent{Name: name, Count: n, TotalNs: int64(v * 1000)}
	}
	return &loadgen.ServerBreakdown{Source: "metrics (nv_inference_*)", Requests: n, Components: []loadgen.ServerComponent{
		us("queue", m.queueUs), us("compute_input", m.inputUs), us("compute_infer", m.inferUs), us("compute_output", m.outputUs),
	}}
}

// stream is the server's account of streamed responses in m; nil when the
// server exports none.
func (m modelMetrics) stream() *loadgen.ServerStream {
	if m.firstCount == 0 && m.gapCount == 0 {
		return nil
	}
	ms := func(name string, sum, count float64) loadgen.ServerComponent {
		return loadgen.ServerComponent{Name: name, Count: int64(count), TotalNs: int64(math.Round(sum * 1e6))}
	}
	return &loadgen.ServerStream{
		FirstResponse: ms("first_response", m.firstSumMs, m.firstCount),
		InterResponse: ms("inter_response", m.gapSumMs, m.gapCount),
	}
}
