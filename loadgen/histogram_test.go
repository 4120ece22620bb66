package loadgen

import (
	"encoding/json"
	"testing"
	"time"
)

func TestHistogramMergeAndEncodeRoundTrip(t *testing.T) {
	a, b, union := NewHistogram(), NewHistogram(), NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		a.Record(i * 1000)    // 1µs..1ms
		b.Record(i * 1000000) // 1ms..1s
		union.Record(i * 1000)
		union.Record(i * 1000000)
	}
	if d := a.Merge(b); d != 0 {
		t.Fatalf("Merge dropped %d values", d)
	}
	if !a.Equal(union) {
		t.Fatalf("merged histogram differs from the union")
	}
	if got := a.Quantile(50); got < 990*time.Microsecond || got > 1010*time.Microsecond {
		t.Errorf("p50 of the union = %v, want about 1ms", got)
	}

	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(a) || back.Count() != 2000 || back.Max() != a.Max() {
		t.Errorf("decoded histogram differs: count %d max %v, want %d %v", back.Count(), back.Max(), a.Count(), a.Max())
	}
	if err := json.Unmarshal([]byte(`"not base64!"`), &back); err == nil {
		t.Error("decoding garbage succeeded")
	}
}

func TestRecordClampsOutOfRange(t *testing.T) {
	h := NewHistogram()
	if n := h.Record(2 * histHighest); n != 1 {
		t.Errorf("an over-range value returned %d, want 1", n)
	}
	if n := h.Record(-5); n != 0 {
		t.Errorf("a negative value returned %d, want 0", n)
	}
	if h.Count() != 2 || h.Max() < time.Duration(histHighest)*999/1000 {
		t.Errorf("count %d max %v: want 2 values with the maximum at the range's top", h.Count(), h.Max())
	}
}

func TestShardRecordsByOutcome(t *testing.T) {
	s := newShards(1, false)[0]
	s.record(0, 10, 100, nil)
	s.record(0, 10, 200, &HTTPStatusError{Status: 503})
	s.record(0, 10, 300, timeoutErr{})
	tl := s.swap(newTally(false))
	if tl.ok != 1 || tl.errors != 1 || tl.timeouts != 1 {
		t.Fatalf("ok %d errors %d timeouts %d, want 1 each", tl.ok, tl.errors, tl.timeouts)
	}
	if tl.response.TotalCount() != 2 || tl.failed.TotalCount() != 1 || tl.lag.TotalCount() != 3 {
		t.Errorf("response %d failed %d lag %d values, want 2 (ok + censored timeout), 1, 3",
			tl.response.TotalCount(), tl.failed.TotalCount(), tl.lag.TotalCount())
	}
	if tl.codes[errorKey{kindHTTP, 503}] != 1 {
		t.Errorf("codes %v, want http_503 once", tl.codes)
	}
}

// The failed histogram is made at a tally's first failure; without one a
// result still carries an empty Failed histogram, and merging a tally
// without one into one with one adds nothing.
func TestFailedHistogramOnFirstFailure(t *testing.T) {
	s := newShards(1, false)[0]
	s.record(0, 10, 100, nil)
	ok := s.swap(newTally(false))
	if ok.failed != nil {
		t.Fatal("a tally without failures made its failed histogram")
	}
	h, dropped := histogramOf(ok.failed)
	if h == nil || h.Count() != 0 || dropped != 0 {
		t.Fatalf("histogramOf(nil) = %v, %d; want an empty histogram", h, dropped)
	}
	s.record(0, 10, 200, &HTTPStatusError{Status: 500})
	bad := s.swap(newTally(false))
	if bad.failed == nil || bad.failed.TotalCount() != 1 {
		t.Fatal("the first failure was not recorded in a failed histogram")
	}
	if bad.add(ok); bad.failed.TotalCount() != 1 {
		t.Errorf("merging a tally without failures changed the failed count to %d", bad.failed.TotalCount())
	}
	if ok.add(bad); ok.failed == nil || ok.failed.TotalCount() != 1 {
		t.Error("merging a failure into a tally without a failed histogram lost it")
	}
	bad.reset()
	if bad.failed == nil || bad.failed.TotalCount() != 0 {
		t.Error("reset should keep the failed histogram, emptied")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func BenchmarkRecord(b *testing.B) {
	s := newShards(1, false)[0]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d := int64(i % 1000000)
		s.record(0, d/4, d, nil)
	}
}
