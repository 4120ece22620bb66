package merge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"
	"github.com/oipkit/oipkit/verdict"
)

func segConfig(rate string) loadgen.Config {
	c := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: "http://127.0.0.1:8000", Model: "add_sub"},
		Load:   loadgen.LoadConfig{Rate: loadgentest.Rate(rate), Duration: loadgen.Duration(10 * time.Second)},
	}
	if err := c.Normalize(); err != nil {
		panic(err)
	}
	return c
}

// recordingTarget answers at once and records every request number.
type recordingTarget struct {
	mu   sync.Mutex
	seqs []uint64
}

func (r *recordingTarget) Do(_ context.Context, seq uint64) error {
	r.mu.Lock()
	r.seqs = append(r.seqs, seq)
	r.mu.Unlock()
	return nil
}

// runSegments runs the segments of cfg concurrently, each against its own
// recording target, with a shared start shortly ahead.
func runSegments(t *testing.T, cfg loadgen.Config, n int, shared bool) ([]*loadgen.Result, []*recordingTarget) {
	t.Helper()
	if shared {
		cfg.Load.StartAt = time.Now().Add(300 * time.Millisecond)
	}
	results := make([]*loadgen.Result, n)
	targets := make([]*recordingTarget, n)
	var wg sync.WaitGroup
	for i := range n {
		c := cfg
		c.Load.Segment = &loadgen.Segment{Index: i, Count: n}
		targets[i] = &recordingTarget{}
		wg.Go(func() {
			r, err := loadgen.Run(context.Background(), targets[i], c)
			if err != nil {
				t.Errorf("segment %d: %v", i, err)
				return
			}
			r.Sources = []string{fmt.Sprintf("segment-%d.json", i)}
			results[i] = r
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return results, targets
}

// TestSegmentsSendTheScheduleBetweenThem runs an open-loop test split in
// three (with a request limit that does not divide evenly) and a
// closed-loop one split in two: every request number of the test is sent
// by exactly one segment, and the merged result counts the test's
// requests, with histograms that are the segments' sums bin for bin.
func TestSegmentsSendTheScheduleBetweenThem(t *testing.T) {
	open := loadgen.Config{
		Target: loadgen.TargetConfig{GRPC: "127.0.0.1:1", Model: "m"},
		Load:   loadgen.LoadConfig{Rate: loadgentest.Rate("2000"), Arrival: loadgen.ArrivalPoisson, Requests: 1000, Duration: loadgen.Duration(5 * time.Second), Interval: loadgen.Duration(100 * time.Millisecond)},
		Inputs: loadgen.InputConfig{Seed: 9},
	}
	results, targets := runSegments(t, open, 3, true)
	var all []uint64
	for i, tg := range targets {
		for _, s := range tg.seqs {
			if s%3 != uint64(i) {
				t.Errorf("segment %d sent request %d", i, s)
			}
		}
		if want := (loadgen.Segment{Index: i, Count: 3}).Share(1000); int64(len(tg.seqs)) != want {
			t.Errorf("segment %d sent %d requests, want %d", i, len(tg.seqs), want)
		}
		all = append(all, tg.seqs...)
	}
	slices.Sort(all)
	for k, s := range all {
		if s != uint64(k) {
			t.Fatalf("the segments' requests are not 0..999 once each: position %d holds %d", k, s)
		}
	}
	m, err := Merge(results...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.Scheduled != 1000 || m.Counts.Sent != 1000 || m.Counts.OK != 1000 {
		t.Errorf("merged counts %+v, want 1000 scheduled, sent and ok", m.Counts)
	}
	if !m.Segments.Complete() || m.Config.Load.Segment != nil || m.TestID != results[0].TestID {
		t.Errorf("merged segments %+v, config segment %v", m.Segments, m.Config.Load.Segment)
	}
	sum := loadgen.NewHistogram()
	for _, r := range results {
		sum.Merge(r.Histograms.Response)
	}
	if !sum.Equal(m.Histograms.Response) {
		t.Error("the merged response histogram is not the sum of the segments'")
	}
	var ivCompleted int64
	for _, iv := range m.Intervals {
		ivCompleted += iv.Completed
	}
	if ivCompleted != 1000 {
		t.Errorf("the merged intervals hold %d requests, want 1000", ivCompleted)
	}
	if v := loadgen.Judge(m); v.Status != verdict.Pass && v.Status != verdict.Inconclusive {
		t.Errorf("merged verdict %v", v)
	}

	closed := loadgen.Config{
		Target: loadgen.TargetConfig{GRPC: "127.0.0.1:1", Model: "m"},
		Load:   loadgen.LoadConfig{Concurrency: 5, Requests: 501, Interval: loadgen.Duration(100 * time.Millisecond)},
	}
	results, targets = runSegments(t, closed, 2, false)
	for i, tg := range targets {
		if want := (loadgen.Segment{Index: i, Count: 2}).Share(501); int64(len(tg.seqs)) != want {
			t.Errorf("closed loop: segment %d sent %d requests, want %d", i, len(tg.seqs), want)
		}
	}
	if w := results[0].Checks.GOMAXPROCS; w == 0 {
		t.Error("no self-check in a segment")
	}
	m, _ = Merge(results...)
	if m.Counts.Sent != 501 || m.Config.Load.Concurrency != 5 {
		t.Errorf("closed loop merged: sent %d, concurrency %d", m.Counts.Sent, m.Config.Load.Concurrency)
	}
}

// TestMergedIntervalsAreAligned: with a shared start the segments'
// intervals start at the same times and merge one to one, their
// percentiles computed from the summed interval histograms.
func TestMergedIntervalsAreAligned(t *testing.T) {
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{GRPC: "127.0.0.1:1", Model: "m"},
		Load:   loadgen.LoadConfig{Rate: loadgentest.Rate("step:400:800:400:300ms"), Duration: loadgen.Duration(600 * time.Millisecond), Interval: loadgen.Duration(100 * time.Millisecond)},
	}
	results, _ := runSegments(t, cfg, 2, true)
	if !results[0].Start.Equal(results[1].Start) {
		t.Fatalf("segments with a shared start started at %v and %v", results[0].Start, results[1].Start)
	}
	m, _ := Merge(results...)
	for i, iv := range m.Intervals {
		var want int64
		for _, r := range results {
			for _, x := range r.Intervals {
				if x.Start == iv.Start {
					want += x.Completed
				}
			}
		}
		if iv.Completed != want {
			t.Errorf("merged interval %d at %.3fs: %d completed, the segments' add up to %d", i, iv.Start, iv.Completed, want)
		}
	}
	// Aligned intervals of the segments coincide: the merged series has one
	// interval per distinct start (a segment slowed by a loaded machine may
	// close fewer intervals than the other).
	starts := map[float64]bool{}
	for _, r := range results {
		for _, x := range r.Intervals {
			starts[x.Start] = true
		}
	}
	if len(m.Intervals) != len(starts) || len(starts) != max(len(results[0].Intervals), len(results[1].Intervals)) {
		t.Errorf("%d merged intervals, %d distinct interval starts in the segments (%d and %d intervals)",
			len(m.Intervals), len(starts), len(results[0].Intervals), len(results[1].Intervals))
	}
	if len(m.Steps) != 2 || m.Steps[0].Counts.Sent+m.Steps[1].Counts.Sent != m.Counts.Sent {
		t.Errorf("merged profile steps %d (sent %v), want the 2 steps of the profile", len(m.Steps), m.Counts.Sent)
	} else if m.Steps[0].Rate != 400 || m.Steps[1].Rate != 800 {
		t.Errorf("merged steps' rates %v and %v, want 400 and 800", m.Steps[0].Rate, m.Steps[1].Rate)
	}
	if m.Counts.Scheduled != 120+240 {
		t.Errorf("scheduled %d, want 360 (400/s then 800/s for 300 ms each)", m.Counts.Scheduled)
	}
}

// fakeSegment is a completed segment result for merge tests.
func fakeSegment(t *testing.T, cfg loadgen.Config, i, n int, start time.Time) *loadgen.Result {
	t.Helper()
	c := cfg
	c.Load.Segment = &loadgen.Segment{Index: i, Count: n}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	r := loadgen.NewResult(c)
	r.Start, r.EndReason = start, loadgen.EndCompleted
	r.Duration, r.Elapsed = loadgen.Duration(time.Second), loadgen.Duration(time.Second)
	r.Sources = []string{fmt.Sprintf("segment-%d.json", i)}
	for v := range 10 {
		r.Histograms.Response.Record(int64(1000 * (v + 1) * (i + 1)))
	}
	r.Counts = loadgen.Counts{Scheduled: 10, Sent: 10, Completed: 10, OK: 10}
	return r
}

func TestCheckSegmentsRefusals(t *testing.T) {
	start := time.Now()
	a := segConfig("100")
	a.Load.StartAt = start
	b := segConfig("200") // another test
	b.Load.StartAt = start
	later := a
	later.Load.StartAt = start.Add(time.Hour)
	for name, c := range map[string]struct {
		rs   []*loadgen.Result
		want string
	}{
		"different tests": {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, b, 1, 2, start)}, "different tests (load (open loop, rate 100/s"},
		"twice":           {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 0, 2, start)}, "segment 0/2 is given twice"},
		"other split":     {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 2, 4, start)}, "overlap: the test was split in 2 and in 4"},
		"other split, disjoint": {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 1, 4, start)},
			"come from splits in 2 and in 4"},
		"other runs":     {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, later, 1, 2, start.Add(time.Hour))}, "different runs of the test"},
		"not at once":    {[]*loadgen.Result{fakeSegment(t, segConfig("100"), 0, 2, start), fakeSegment(t, segConfig("100"), 1, 2, start.Add(time.Hour))}, "not at the same time"},
		"with a run too": {[]*loadgen.Result{fakeSegment(t, a, 0, 2, start), func() *loadgen.Result { r := fakeSegment(t, a, 1, 2, start); r.Config.Load.Segment = nil; return r }()}, "is not a segment"},
	} {
		problems := CheckSegments(c.rs)
		if !strings.Contains(strings.Join(problems, "; "), c.want) {
			t.Errorf("%s: problems %q, want one saying %q", name, problems, c.want)
		}
	}
	if p := CheckSegments([]*loadgen.Result{fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 1, 2, start)}); len(p) > 0 {
		t.Errorf("two halves of one test: %q", p)
	}

	// A forced merge of overlapping segments is not the test: inconclusive.
	m, _ := Merge(fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 0, 2, start), fakeSegment(t, a, 1, 2, start))
	if v := loadgen.Judge(m); v.Status != verdict.Inconclusive || !strings.Contains(strings.Join(v.Reasons, ";"), "given twice") {
		t.Errorf("forced overlapping merge: %v", v)
	}
}

func TestMissingAndFailedSegmentsAreIncomplete(t *testing.T) {
	start := time.Now()
	cfg := segConfig("100")
	cfg.Load.StartAt = start
	full, _ := Merge(fakeSegment(t, cfg, 0, 3, start), fakeSegment(t, cfg, 1, 3, start), fakeSegment(t, cfg, 2, 3, start))
	loadgen.EvaluateThresholds(full, nil)
	if v := loadgen.Judge(full); v.Status != verdict.Pass {
		t.Errorf("all segments: %v", v)
	}

	m, _ := Merge(fakeSegment(t, cfg, 0, 3, start), fakeSegment(t, cfg, 2, 3, start))
	loadgen.EvaluateThresholds(m, loadgentest.Thresholds("p99<1ns")) // fails, but incomplete outranks it
	v := loadgen.Judge(m)
	if v.Status != verdict.Inconclusive || !strings.Contains(strings.Join(v.Reasons, ";"), "1 of 3 segments missing (1/3)") {
		t.Errorf("a segment missing: %v", v)
	}
	if m.Counts.Sent != 20 || !slices.Equal(m.Segments.Missing, []int{1}) || !slices.Equal(m.Segments.Merged, []int{0, 2}) {
		t.Errorf("merged %d sent, segments %+v", m.Counts.Sent, m.Segments)
	}

	// A segment that could not start leaves an error result: incomplete.
	c1 := cfg
	c1.Load.Segment = &loadgen.Segment{Index: 1, Count: 3}
	failed := loadgen.NewErrorResult(c1, start.Add(time.Minute), fmt.Errorf("the start time had passed"))
	m, _ = Merge(fakeSegment(t, cfg, 0, 3, start), failed, fakeSegment(t, cfg, 2, 3, start))
	if v := loadgen.Judge(m); v.Status != verdict.Inconclusive || !strings.Contains(strings.Join(v.Reasons, ";"), "segment 1/3 did not complete: error: the start time had passed") {
		t.Errorf("a failed segment: %v", v)
	}
	if m.Duration != loadgen.Duration(time.Second) {
		t.Errorf("the failed segment's result moved the window: %v", m.Duration)
	}
	// None ran: the test did not run.
	m, _ = Merge(failed)
	if v := loadgen.Judge(m); v.Status != verdict.NotRun {
		t.Errorf("no segment ran: %v", v)
	}
}
