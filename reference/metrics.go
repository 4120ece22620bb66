package reference

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Prometheus metrics of inference requests, written in the text exposition
// format by hand to avoid a dependency. Two sets of families:
//
//   - The reference's own, by model and protocol: oip_requests_total (REST
//     /infer and gRPC ModelInfer by status code; health, metadata and
//     streamed calls are not counted), oip_request_duration_seconds and
//     oip_inflight_requests.
//   - Triton's per model version (labels model and version, as Triton
//     writes them), read from the statistics extension's counters so the
//     two always agree: nv_inference_request_success / _failure,
//     nv_inference_count, nv_inference_exec_count (counters), the
//     cumulative nv_inference_request_duration_us, _queue_duration_us,
//     _compute_input_duration_us, _compute_infer_duration_us and
//     _compute_output_duration_us (counters, microseconds, of successful
//     requests), and for decoupled models the histogram
//     nv_inference_first_response_histogram_ms (request received to first
//     response, in milliseconds). Triton has no family for the gaps
//     between the responses of one request; the reference adds
//     oip_inference_inter_response_histogram_ms (each gap between two
//     consecutive responses of one streamed request, in milliseconds), so
//     that a load generator's inter-response gaps can be checked against
//     the server's. Streamed requests are counted when their last response
//     was sent; see ext_statistics.go for what each counter covers.

// durationBuckets are the upper bounds of the latency histogram.
var durationBuckets = []time.Duration{
	500 * time.Microsecond,
	time.Millisecond,
	2500 * time.Microsecond,
	5 * time.Millisecond,
	10 * time.Millisecond,
	25 * time.Millisecond,
	50 * time.Millisecond,
	100 * time.Millisecond,
	250 * time.Millisecond,
	500 * time.Millisecond,
	time.Second,
	2500 * time.Millisecond,
	5 * time.Second,
	10 * time.Second,
}

type counterKey struct{ model, protocol, code string }

type histogramKey struct{ model, protocol string }

// histogram counts observations per bucket (not cumulated; the exposition
// cumulates) plus one overflow bucket, and the sum in nanoseconds.
type histogram struct {
	counts   [15]atomic.Uint64 // len(durationBuckets)+1
	sumNanos atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	i, _ := slices.BinarySearch(durationBuckets, d) // first bound >= d: le is inclusive
	h.counts[i].Add(1)
	h.sumNanos.Add(int64(d))
}

// msBuckets are the upper bounds, in milliseconds, of the stream
// histograms (finer than Triton's default so that token intervals of a few
// milliseconds fall into distinct buckets).
var msBuckets = []float64{1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// msHistogram is a histogram of durations exposed in milliseconds: counts
// per bucket (not cumulated) plus an overflow bucket, and the exact sum in
// nanoseconds.
type msHistogram struct {
	counts   [15]atomic.Uint64 // len(msBuckets)+1
	sumNanos atomic.Int64
}

func (h *msHistogram) observe(d time.Duration) {
	d = max(d, 0)
	ms := float64(d) / float64(time.Millisecond)
	i, _ := slices.BinarySearch(msBuckets, ms) // first bound >= ms: le is inclusive
	h.counts[i].Add(1)
	h.sumNanos.Add(int64(d))
}

type metrics struct {
	inflight atomic.Int64
	stats    *statistics // the source of the nv_inference_* families

	mu         sync.RWMutex
	counters   map[counterKey]*atomic.Uint64
	histograms map[histogramKey]*histogram
}

func newMetrics() *metrics {
	return &metrics{
		counters:   make(map[counterKey]*atomic.Uint64),
		histograms: make(map[histogramKey]*histogram),
	}
}

// observe records one finished request. code is the HTTP status or the
// canonical gRPC code name.
func (m *metrics) observe(model, protocol, code string, d time.Duration) {
	ck := counterKey{model, protocol, code}
	hk := histogramKey{model, protocol}
	m.mu.RLock()
	c, h := m.counters[ck], m.histograms[hk]
	m.mu.RUnlock()
	if c == nil || h == nil {
		m.mu.Lock()
		if c = m.counters[ck]; c == nil {
			c = new(atomic.Uint64)
			m.counters[ck] = c
		}
		if h = m.histograms[hk]; h == nil {
			h = new(histogram)
			m.histograms[hk] = h
		}
		m.mu.Unlock()
	}
	c.Add(1)
	h.observe(d)
}

// write writes every metric in the Prometheus text format, series sorted by
// label values so the output is deterministic.
func (m *metrics) write(w io.Writer) error {
	type counterSeries struct {
		counterKey
		c *atomic.Uint64
	}
	type histogramSeries struct {
		histogramKey
		h *histogram
	}
	m.mu.RLock()
	counters := make([]counterSeries, 0, len(m.counters))
	for k, c := range m.counters {
		counters = append(counters, counterSeries{k, c})
	}
	histograms := make([]histogramSeries, 0, len(m.histograms))
	for k, h := range m.histograms {
		histograms = append(histograms, histogramSeries{k, h})
	}
	m.mu.RUnlock()
	slices.SortFunc(counters, func(a, b counterSeries) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.protocol, b.protocol), cmp.Compare(a.code, b.code))
	})
	slices.SortFunc(histograms, func(a, b histogramSeries) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.protocol, b.protocol))
	})

	bw := bufio.NewWriter(w)
	bw.WriteString("# HELP oip_requests_total Inference requests answered, by model, protocol (rest or grpc) and status code.\n")
	bw.WriteString("# TYPE oip_requests_total counter\n")
	for _, k := range counters {
		bw.WriteString(`oip_requests_total{model="` + escapeLabel(k.model) + `",protocol="` + k.protocol + `",code="` + escapeLabel(k.code) + `"} `)
		bw.WriteString(strconv.FormatUint(k.c.Load(), 10))
		bw.WriteByte('\n')
	}

	bw.WriteString("# HELP oip_request_duration_seconds Inference request latency, by model and protocol.\n")
	bw.WriteString("# TYPE oip_request_duration_seconds histogram\n")
	for _, k := range histograms {
		h := k.h
		labels := `model="` + escapeLabel(k.model) + `",protocol="` + k.protocol + `"`
		var cum uint64
		for i := range h.counts {
			cum += h.counts[i].Load()
			le := "+Inf"
			if i < len(durationBuckets) {
				le = strconv.FormatFloat(durationBuckets[i].Seconds(), 'g', -1, 64)
			}
			bw.WriteString("oip_request_duration_seconds_bucket{" + labels + `,le="` + le + `"} `)
			bw.WriteString(strconv.FormatUint(cum, 10))
			bw.WriteByte('\n')
		}
		bw.WriteString("oip_request_duration_seconds_sum{" + labels + "} ")
		bw.WriteString(strconv.FormatFloat(time.Duration(h.sumNanos.Load()).Seconds(), 'g', -1, 64))
		bw.WriteByte('\n')
		// The count is the cumulated buckets, so it always equals +Inf even
		// while requests are being recorded.
		bw.WriteString("oip_request_duration_seconds_count{" + labels + "} ")
		bw.WriteString(strconv.FormatUint(cum, 10))
		bw.WriteByte('\n')
	}

	bw.WriteString("# HELP oip_inflight_requests Inference requests being handled.\n")
	bw.WriteString("# TYPE oip_inflight_requests gauge\n")
	bw.WriteString("oip_inflight_requests " + strconv.FormatInt(m.inflight.Load(), 10) + "\n")
	if m.stats != nil {
		m.stats.writeTriton(bw)
	}
	return bw.Flush()
}

// writeTriton writes Triton's per model version families from the
// statistics counters.
func (st *statistics) writeTriton(bw *bufio.Writer) {
	type series struct {
		statsKey
		v *versionStats
	}
	st.mu.RLock()
	all := make([]series, 0, len(st.byVersion))
	for k, v := range st.byVersion {
		all = append(all, series{k, v})
	}
	st.mu.RUnlock()
	slices.SortFunc(all, func(a, b series) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.version, b.version))
	})
	labels := func(k statsKey) string {
		return `model="` + escapeLabel(k.model) + `",version="` + escapeLabel(k.version) + `"`
	}
	counter := func(name, help string, value func(*versionStats) uint64) {
		bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n")
		for _, s := range all {
			bw.WriteString(name + "{" + labels(s.statsKey) + "} " + strconv.FormatUint(value(s.v), 10) + "\n")
		}
	}
	counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes",
		func(v *versionStats) uint64 { return v.success.count.Load() })
	counter("nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
		func(v *versionStats) uint64 { return v.fail.count.Load() })
	counter("nv_inference_count", "Number of inferences performed (does not include cached requests)",
		func(v *versionStats) uint64 { return v.inferenceCount.Load() })
	counter("nv_inference_exec_count", "Number of model executions performed (does not include cached requests)",
		func(v *versionStats) uint64 { return v.executionCount.Load() })
	for _, c := range []struct {
		name, help string
		of         func(*versionStats) *durationStat
	}{
		{"nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (successful requests)",
			func(v *versionStats) *durationStat { return &v.success }},
		{"nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds",
			func(v *versionStats) *durationStat { return &v.queue }},
		{"nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds",
			func(v *versionStats) *durationStat { return &v.computeInput }},
		{"nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds",
			func(v *versionStats) *durationStat { return &v.computeInfer }},
		{"nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds",
			func(v *versionStats) *durationStat { return &v.computeOutput }},
	} {
		counter(c.name, c.help, func(v *versionStats) uint64 { return c.of(v).ns.Load() / 1000 })
	}
	histogram := func(name, help string, of func(*versionStats) *msHistogram) {
		bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n")
		for _, s := range all {
			h := of(s.v)
			if h.sumNanos.Load() == 0 && h.counts[0].Load() == 0 {
				continue // not a decoupled model, or not streamed yet
			}
			l := labels(s.statsKey)
			var cum uint64
			for i := range h.counts {
				cum += h.counts[i].Load()
				le := "+Inf"
				if i < len(msBuckets) {
					le = strconv.FormatFloat(msBuckets[i], 'g', -1, 64)
				}
				bw.WriteString(name + "_bucket{" + l + `,le="` + le + `"} ` + strconv.FormatUint(cum, 10) + "\n")
			}
			sum := float64(h.sumNanos.Load()) / float64(time.Millisecond)
			bw.WriteString(name + "_sum{" + l + "} " + strconv.FormatFloat(sum, 'g', -1, 64) + "\n")
			bw.WriteString(name + "_count{" + l + "} " + strconv.FormatUint(cum, 10) + "\n")
		}
	}
	histogram("nv_inference_first_response_histogram_ms", "Duration from request to first response in milliseconds (decoupled models)",
		func(v *versionStats) *msHistogram { return &v.firstResponse })
	histogram("oip_inference_inter_response_histogram_ms", "Gaps between consecutive responses of one streamed request in milliseconds (decoupled models; reference only, Triton has no such family)",
		func(v *versionStats) *msHistogram { return &v.interResponse })
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel escapes a label value for the text exposition format.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
