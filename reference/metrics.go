package reference

import (
	"bufio"
	"cmp"
	"io"
	runtimemetrics "runtime/metrics"
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
//
// Plus three of the Prometheus Go collector's families, under its names, so
// that a soak test (cmd/soak) can watch the process for leaks:
// go_goroutines, go_memstats_heap_inuse_bytes and go_memstats_heap_objects.
// They are read with runtime/metrics, which does not stop the world as
// runtime.ReadMemStats does.

// buckets are a histogram's upper bounds and the unit in which the
// exposition writes them and the sum.
type buckets struct {
	bounds []time.Duration // at most 14: histogram.counts holds one more
	unit   time.Duration
}

// latencyBuckets are those of oip_request_duration_seconds.
var latencyBuckets = &buckets{unit: time.Second, bounds: []time.Duration{
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second,
}}

// streamBuckets are those of the stream histograms, in milliseconds as
// Triton writes them (finer than Triton's default so that token intervals
// of a few milliseconds fall into distinct buckets).
var streamBuckets = &buckets{unit: time.Millisecond, bounds: []time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second,
}}

type counterKey struct{ model, protocol, code string }

type histogramKey struct{ model, protocol string }

// histogram counts observations per bucket (not cumulated; the exposition
// cumulates) plus one overflow bucket, and the exact sum in nanoseconds.
// Its buckets are given by the family it belongs to.
type histogram struct {
	counts   [15]atomic.Uint64
	sumNanos atomic.Int64
}

func (h *histogram) observe(b *buckets, d time.Duration) {
	d = max(d, 0)
	i, _ := slices.BinarySearch(b.bounds, d) // first bound >= d: le is inclusive
	h.counts[i].Add(1)
	h.sumNanos.Add(int64(d))
}

// write writes the histogram's series of one label set: the cumulated
// buckets, the sum and the count (the cumulated buckets, so it always
// equals +Inf even while observations are being recorded).
func (h *histogram) write(bw *bufio.Writer, b *buckets, name, labels string) {
	in := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/float64(b.unit), 'g', -1, 64) }
	var cum uint64
	for i := range b.bounds {
		cum += h.counts[i].Load()
		bw.WriteString(name + "_bucket{" + labels + `,le="` + in(b.bounds[i]) + `"} ` + strconv.FormatUint(cum, 10) + "\n")
	}
	cum += h.counts[len(b.bounds)].Load()
	bw.WriteString(name + "_bucket{" + labels + `,le="+Inf"} ` + strconv.FormatUint(cum, 10) + "\n")
	bw.WriteString(name + "_sum{" + labels + "} " + in(time.Duration(h.sumNanos.Load())) + "\n")
	bw.WriteString(name + "_count{" + labels + "} " + strconv.FormatUint(cum, 10) + "\n")
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
	h.observe(latencyBuckets, d)
}

// requests is the number of inference requests answered so far, whatever
// their status: what a shutdown reports it answered.
func (m *metrics) requests() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var n uint64
	for _, c := range m.counters {
		n += c.Load()
	}
	return n
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
		k.h.write(bw, latencyBuckets, "oip_request_duration_seconds", `model="`+escapeLabel(k.model)+`",protocol="`+k.protocol+`"`)
	}

	bw.WriteString("# HELP oip_inflight_requests Inference requests being handled.\n")
	bw.WriteString("# TYPE oip_inflight_requests gauge\n")
	bw.WriteString("oip_inflight_requests " + strconv.FormatInt(m.inflight.Load(), 10) + "\n")
	if m.stats != nil {
		m.stats.writeTriton(bw)
	}
	writeGoRuntime(bw)
	return bw.Flush()
}

// goRuntimeSamples are the runtime/metrics read for the Go families, in
// this order.
var goRuntimeSamples = []string{
	"/sched/goroutines:goroutines",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/objects:objects",
}

// writeGoRuntime writes the Go collector's families. Its heap in use
// (MemStats.HeapInuse) is the bytes of spans in use: live and not yet swept
// objects plus the unused space of those spans.
func writeGoRuntime(bw *bufio.Writer) {
	s := make([]runtimemetrics.Sample, len(goRuntimeSamples))
	for i, name := range goRuntimeSamples {
		s[i].Name = name
	}
	runtimemetrics.Read(s)
	value := func(i int) string {
		if s[i].Value.Kind() != runtimemetrics.KindUint64 { // not in this Go release
			return "NaN"
		}
		return strconv.FormatUint(s[i].Value.Uint64(), 10)
	}
	inuse := "NaN"
	if s[1].Value.Kind() == runtimemetrics.KindUint64 && s[2].Value.Kind() == runtimemetrics.KindUint64 {
		inuse = strconv.FormatUint(s[1].Value.Uint64()+s[2].Value.Uint64(), 10)
	}
	bw.WriteString("# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\n")
	bw.WriteString("go_goroutines " + value(0) + "\n")
	bw.WriteString("# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.\n# TYPE go_memstats_heap_inuse_bytes gauge\n")
	bw.WriteString("go_memstats_heap_inuse_bytes " + inuse + "\n")
	bw.WriteString("# HELP go_memstats_heap_objects Number of currently allocated objects.\n# TYPE go_memstats_heap_objects gauge\n")
	bw.WriteString("go_memstats_heap_objects " + value(3) + "\n")
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
	streamHistogram := func(name, help string, of func(*versionStats) *histogram) {
		bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n")
		for _, s := range all {
			if h := of(s.v); h.sumNanos.Load() != 0 || h.counts[0].Load() != 0 { // else not a decoupled model, or not streamed yet
				h.write(bw, streamBuckets, name, labels(s.statsKey))
			}
		}
	}
	streamHistogram("nv_inference_first_response_histogram_ms", "Duration from request to first response in milliseconds (decoupled models)",
		func(v *versionStats) *histogram { return &v.firstResponse })
	streamHistogram("oip_inference_inter_response_histogram_ms", "Gaps between consecutive responses of one streamed request in milliseconds (decoupled models; reference only, Triton has no such family)",
		func(v *versionStats) *histogram { return &v.interResponse })
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel escapes a label value for the text exposition format.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
