package loadgen

import (
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: nanoseconds from 1 ns to 1 h with 3 significant
// digits (values below 2048 ns are exact, others within 0.1 %). A dense
// histogram of this geometry is about 270 KB; the recorders use dense ones
// (constant-time recording), results keep sparse ones.
const (
	histLowest  = 1
	histHighest = int64(time.Hour)
	histDigits  = 3
)

func newHist() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// A Histogram is a latency distribution in nanoseconds, as kept in a
// [Result]. It is sparse (HdrHistogram's packed form): its memory grows with
// the number of distinct latency buckets seen — a few KB for a typical run —
// not with the range, so a result can carry one per sweep level or rate step
// without growing by megabytes. In JSON it is the base64 string of its
// V2-compressed HdrHistogram encoding, the form HistogramLogAnalyzer and every
// HdrHistogram port read, so percentiles can be recomputed and histograms
// merged after the fact.
type Histogram struct {
	p *hdr.PackedHistogram
}

// NewHistogram returns an empty histogram with the load generator's geometry.
func NewHistogram() *Histogram {
	return &Histogram{p: hdr.NewPacked(histLowest, histHighest, histDigits)}
}

// histogramOf copies a dense recorder histogram (nil is empty) into a new
// Histogram and returns how many values it could not hold (none for the
// same geometry).
func histogramOf(d *hdr.Histogram) (*Histogram, int64) {
	h := NewHistogram()
	return h, h.mergeDense(d)
}

// mergeDense adds a dense recorder histogram (nil is empty) to h.
func (h *Histogram) mergeDense(d *hdr.Histogram) int64 {
	if d == nil {
		return 0
	}
	return h.p.MergeFrom(d)
}

// HDR returns a dense copy, for HdrHistogram APIs that need one.
func (h *Histogram) HDR() *hdr.Histogram {
	d := newHist()
	h.p.MergeInto(d)
	return d
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.p.TotalCount() }

// Quantile returns the value at percentile p (0 < p <= 100); 0 when empty.
func (h *Histogram) Quantile(p float64) time.Duration {
	if h.p.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.p.ValueAtPercentile(p))
}

// Max returns the largest recorded value (to the histogram's precision).
func (h *Histogram) Max() time.Duration {
	if h.p.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.p.Max())
}

// Min returns the smallest recorded value.
func (h *Histogram) Min() time.Duration {
	if h.p.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.p.Min())
}

// Mean returns the mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.p.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.p.Mean())
}

// Merge adds o's values to h and returns how many could not be represented
// in h's range. Merge never loses values silently: callers add the count
// to the result.
func (h *Histogram) Merge(o *Histogram) (dropped int64) { return h.p.Merge(o.p) }

// Clone returns a deep copy.
func (h *Histogram) Clone() *Histogram { return &Histogram{p: h.p.Clone()} }

// Equal reports whether h and o hold the same counts in the same buckets.
func (h *Histogram) Equal(o *Histogram) bool {
	if h.Count() != o.Count() {
		return false
	}
	type bucket struct{ v, c int64 }
	var a []bucket
	h.p.ForEachBucket(func(v, c int64) bool { a = append(a, bucket{v, c}); return true })
	i, same := 0, true
	o.p.ForEachBucket(func(v, c int64) bool {
		same = i < len(a) && a[i] == bucket{v, c}
		i++
		return same
	})
	return same && i == len(a)
}

// Buckets calls fn for every populated bucket in ascending order with the
// bucket's lowest value and its count, until fn returns false.
func (h *Histogram) Buckets(fn func(value, count int64) bool) { h.p.ForEachBucket(fn) }

// MarshalJSON encodes the histogram as a base64 V2-compressed string.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.p.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	return json.Marshal(string(b))
}

// maxHistogramJSON bounds an encoded histogram in a result file: the
// encoding of a full dense histogram of the geometry is far smaller, so a
// larger string is not one of ours.
const maxHistogramJSON = 4 << 20

// UnmarshalJSON decodes a base64 V2-compressed string.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	if len(b) > maxHistogramJSON {
		return fmt.Errorf("histogram: %d bytes encoded, more than the %d a load result holds", len(b), maxHistogramJSON)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	p, err := hdr.DecodePacked([]byte(s))
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	h.p = p
	return nil
}

// recordClamped records v, clamping it into the histogram's range; it
// returns 1 when v was above the range (recorded as the maximum), so callers
// can count such values, and 0 otherwise. Negative values (a clock step
// between two monotonic readings cannot produce them, but be safe) become 0.
// It does not allocate.
func recordClamped(h *hdr.Histogram, v int64) int64 {
	var over int64
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v, over = histHighest, 1
	}
	_ = h.RecordValue(v) // cannot fail: v is in range
	return over
}

// Record adds v, clamped into range like recordClamped, and returns 1 when
// it was above the range. Results are built from recorder histograms; this
// is for tests and synthetic results.
func (h *Histogram) Record(v int64) int64 {
	var over int64
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v, over = histHighest, 1
	}
	_ = h.p.RecordValue(v)
	return over
}

// countAbove counts the values above v (to the histogram's precision: a
// bucket counts when its lowest value is above v).
func (h *Histogram) countAbove(v int64) int64 {
	var n int64
	h.p.ForEachBucket(func(value, count int64) bool {
		if value > v {
			n += count
		}
		return true
	})
	return n
}
