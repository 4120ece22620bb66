package loadgen

import (
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: nanoseconds from 1 ns to 1 h with 3 significant
// digits (values below 2048 ns are exact, others within 0.1 %). One
// histogram is about 270 KB dense, a few KB encoded.
const (
	histLowest  = 1
	histHighest = int64(time.Hour)
	histDigits  = 3
)

func newHist() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// A Histogram is a latency distribution in nanoseconds. In JSON it is the
// base64 string of its V2-compressed HdrHistogram encoding, the form that
// HistogramLogAnalyzer and every HdrHistogram port read, so percentiles can
// be recomputed and histograms merged after the fact.
type Histogram struct {
	h *hdr.Histogram
}

// NewHistogram returns an empty histogram with the load generator's geometry.
func NewHistogram() *Histogram { return &Histogram{h: newHist()} }

// HDR returns the underlying HdrHistogram.
func (h *Histogram) HDR() *hdr.Histogram { return h.h }

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile returns the value at percentile p (0 < p <= 100); 0 when empty.
func (h *Histogram) Quantile(p float64) time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtPercentile(p))
}

// Max returns the largest recorded value (to the histogram's precision).
func (h *Histogram) Max() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Max())
}

// Min returns the smallest recorded value.
func (h *Histogram) Min() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Min())
}

// Mean returns the mean of the recorded values.
func (h *Histogram) Mean() time.Duration { return time.Duration(h.h.Mean()) }

// Merge adds o's values to h and returns how many could not be represented
// in h's range. Merge never loses values silently: callers add the count
// to the result.
func (h *Histogram) Merge(o *Histogram) (dropped int64) { return h.h.Merge(o.h) }

// Clone returns a deep copy.
func (h *Histogram) Clone() *Histogram { return &Histogram{h: h.h.Clone()} }

// MarshalJSON encodes the histogram as a base64 V2-compressed string.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON decodes a base64 V2-compressed string.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	d, err := hdr.Decode([]byte(s))
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	h.h = d
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
