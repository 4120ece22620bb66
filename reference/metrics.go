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
// format by hand to avoid a dependency. Only inference requests (REST /infer
// and gRPC ModelInfer) are counted; health and metadata calls are not.

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

type metrics struct {
	inflight atomic.Int64

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
	return bw.Flush()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel escapes a label value for the text exposition format.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
