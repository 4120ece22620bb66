package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/verdict"
)

// fixedTarget answers after a fixed delay, or fails with err.
type fixedTarget struct {
	delay time.Duration
	err   func(seq uint64) error
}

func (f fixedTarget) Do(ctx context.Context, seq uint64) error {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.err != nil {
		return f.err(seq)
	}
	return nil
}

func fakeConfig(load LoadConfig) Config {
	if load.Interval == 0 {
		load.Interval = Duration(100 * time.Millisecond)
	}
	return Config{
		Target: TargetConfig{GRPC: "127.0.0.1:1", Model: "m"},
		Load:   load,
		Checks: CheckConfig{LagTolerance: Duration(100 * time.Millisecond)}, // the test machine is shared
	}
}

func mustRun(t *testing.T, tg Target, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, tg, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestParseLevels(t *testing.T) {
	for _, c := range []struct {
		spec    string
		integer bool
		want    []float64
	}{
		{"1:32:x2", true, []float64{1, 2, 4, 8, 16, 32}},
		{"1:40:x2", true, []float64{1, 2, 4, 8, 16, 32, 40}},
		{"1:4", true, []float64{1, 2, 3, 4}},
		{"100:500:200", false, []float64{100, 300, 500}},
		{"100:550:200", false, []float64{100, 300, 500, 550}},
		{"1:3:*1.5", true, []float64{1, 2, 3}},
		{"0.5:2:x2", false, []float64{0.5, 1, 2}},
		{"8:8", true, []float64{8}},
	} {
		got, err := ParseLevels(c.spec, c.integer)
		if err != nil || !slices.Equal(got.Values(), c.want) {
			t.Errorf("ParseLevels(%q) = %v, %v; want %v", c.spec, got, err, c.want)
		}
	}
	for _, spec := range []string{"", "1", "1:2:3:4", "0:4", "-1:4", "4:1", "1:x:1", "1:4:0", "1:4:x1", "1:4:x0.5",
		"1.5:4", "1:1000", "a:b", "1:NaN"} {
		if got, err := ParseLevels(spec, true); err == nil {
			t.Errorf("ParseLevels(%q) = %v, want an error", spec, got)
		}
	}
}

func TestNormalizeRejectsAndIsIdempotent(t *testing.T) {
	base := func() Config { return Config{} } // the engine needs no target address nor model
	for name, mutate := range map[string]func(*Config){
		"negative duration":      func(c *Config) { c.Load.Duration = -1 },
		"negative interval":      func(c *Config) { c.Load.Interval = -1 },
		"negative concurrency":   func(c *Config) { c.Load.Concurrency = -1 },
		"negative requests":      func(c *Config) { c.Load.Requests = -1 },
		"percentile 100":         func(c *Config) { c.Percentile = 100 },
		"max error rate 2":       func(c *Config) { v := 2.0; c.Checks.MaxErrorRate = &v },
		"two ranges":             func(c *Config) { c.Load.ConcurrencyRange, c.Load.RateRange = mustLevels("1:2"), mustLevels("1:2") },
		"sweep with rate":        func(c *Config) { c.Load.RateRange, c.Load.Rate = mustLevels("1:2"), rateOf("5") },
		"fractional concurrency": func(c *Config) { c.Load.ConcurrencyRange = mustLevels("1.5:4") },
		"stability and duration": func(c *Config) { c.Load.Stability, c.Load.Duration = &StabilityConfig{}, Duration(time.Second) },
		"stability and ramp":     func(c *Config) { c.Load.Stability, c.Load.Rate = &StabilityConfig{}, rateOf("linear:1:10:5s") },
		"empty SLO":              func(c *Config) { c.SLO = ths() },
		"unparsed SLO":           func(c *Config) { c.SLO = []Threshold{{Text: "p99"}} },
		"SLO ramp":               func(c *Config) { c.SLO, c.Load.Rate = ths("p99<1s"), rateOf("step:1:2:1:1s") },
		"resolution without SLO": func(c *Config) { c.SLOResolution = 0.1 },
	} {
		c := base()
		mutate(&c)
		if err := c.Normalize(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Normalize = %v, want a configuration error", name, err)
		}
	}
	for name, mutate := range map[string]func(*Config){
		"defaults":  func(*Config) {},
		"stability": func(c *Config) { c.Load.Stability = &StabilityConfig{Tolerance: 0.1} },
		"sweep":     func(c *Config) { c.Load.RateRange = mustLevels("10:40:x2") },
		"search":    func(c *Config) { c.SLO = ths("p99<10ms") },
		"requests":  func(c *Config) { c.Load.Requests = 10 },
	} {
		c := base()
		mutate(&c)
		if err := c.Normalize(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again := c
		if err := again.Normalize(); err != nil {
			t.Errorf("%s: a second Normalize failed: %v", name, err)
		}
	}
	c := base()
	c.Load.Requests = 10
	_ = c.Normalize()
	if c.Load.Duration != 0 {
		t.Errorf("-n alone: duration %v, want no time limit", c.Load.Duration)
	}
}

func TestThresholdSpellingsAndDefaultBound(t *testing.T) {
	for in, metric := range map[string]string{"p(95)<500": "p95", "p(99.9)<=1s": "p99.9", "avg<2ms": "mean", "med<1ms": "p50",
		"min>0s": "min", "service_avg<1ms": "mean"} {
		th, err := ParseThreshold(in)
		if err != nil || th.metric != metric {
			t.Errorf("ParseThreshold(%q) = %+v, %v; want metric %s", in, th, err, metric)
		}
	}
	if th, _ := ParseThreshold("p(95)<500"); th.value != float64(500*time.Millisecond) {
		t.Errorf("p(95)<500 bounds %v, want 500ms (k6's unit)", time.Duration(th.value))
	}
	cfg := Config{}
	if g := cfg.Gates(); !slices.Equal(ThresholdTexts(g), []string{"error_rate<=1%"}) {
		t.Errorf("default gates %v", g)
	}
	cfg.Thresholds = ths("p99<1s", "timeouts==0")
	if g := cfg.Gates(); len(g) != 2 {
		t.Errorf("a threshold on timeouts should replace the default bound: %v", g)
	}
	off := 1.0
	cfg = Config{Checks: CheckConfig{MaxErrorRate: &off}}
	if g := cfg.Gates(); len(g) != 0 {
		t.Errorf("a MaxErrorRate of 100%% should turn the bound off: %v", g)
	}
}

func TestErrorSamplesAreBounded(t *testing.T) {
	s := newShards(1, false)[0]
	for i := range 10 {
		s.record(0, 1, 2, fmt.Errorf("boom %d\nsecond line", i%5))
	}
	s.record(0, 1, 2, errors.New(strings.Repeat("x", 10*MaxErrorMessage)))
	s.record(0, 1, 2, timeoutErr{})
	tl := s.swap(newTally(false))
	errs, samples := errorTables(tl.codes, tl.timeouts, tl.samples)
	if errs["other"] != 11 || errs["timeout"] != 1 {
		t.Fatalf("errors %v", errs)
	}
	other := samples["other"]
	if len(other) != MaxErrorSamples || other[0] != "boom 0 second line" || other[1] != "boom 1 second line" {
		t.Errorf("samples %q: want the first %d distinct messages on one line", other, MaxErrorSamples)
	}
	if got := samples["timeout"]; len(got) != 1 || got[0] != "i/o timeout" {
		t.Errorf("timeout samples %q", got)
	}
	long := sampleOf(errors.New(strings.Repeat("é", MaxErrorMessage)))
	if len(long) > MaxErrorMessage+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("a long message kept %d bytes: %q", len(long), long)
	}
}

// A sweep measures every level on its own; the levels add up to the
// totals, and thresholds are judged per level.
func TestStabilityRule(t *testing.T) {
	steady := func(k int, rate float64, scale int64) *stabilityJudge {
		j := &stabilityJudge{tol: 0.05, pct: 99}
		for i := range k {
			h := NewHistogram()
			for v := int64(1); v <= 2000; v++ {
				h.Record(v * scale * int64(time.Microsecond) / 1000)
			}
			r := rate
			if i%2 == 1 {
				r *= 1.01
			}
			j.windows = append(j.windows, stabilityWindow{rate: r, response: h})
		}
		return j
	}
	if s := steady(4, 1000, 1).judge(); s.Converged || !strings.Contains(s.Reason, "4 of at least 5 windows") {
		t.Errorf("4 windows: %+v", s)
	}
	s := steady(6, 1000, 1).judge()
	if !s.Converged || s.Windows != 6 || s.Samples != 12000 || s.Sections < 5 || s.Latency.RelHalfWidth() > 0.05 {
		t.Errorf("6 identical windows: %+v", s)
	}
	if !strings.Contains(s.Rule, "p99") || math.IsInf(s.Throughput.High, 1) {
		t.Errorf("rule %q, throughput %+v", s.Rule, s.Throughput)
	}
	// Too few samples beyond p99.9 for five sections of ten.
	j := steady(6, 1000, 1)
	j.pct = 99.9
	if s := j.judge(); s.Converged || !strings.Contains(s.Reason, "needs at least 50000") {
		t.Errorf("p99.9 on 12000 samples: %+v", s)
	}
	// Latency that doubles halfway through is not stable, whatever the count.
	j = steady(10, 1000, 1)
	for i := 5; i < 10; i++ {
		j.windows[i] = steady(1, 1000, 2).windows[0]
	}
	if s := j.judge(); s.Converged {
		t.Errorf("a level shift converged: %+v", s)
	}
}

func TestStabilityEndsTheRun(t *testing.T) {
	// The target sleeps, so its latency is the timer's millisecond, not the
	// microsecond of a no-op call, whose p99 is the scheduler's noise: under
	// the race detector on a shared machine that never settled within ±25%.
	steady := fixedTarget{delay: time.Millisecond}
	cfg := fakeConfig(LoadConfig{Concurrency: 4, Stability: &StabilityConfig{Tolerance: 0.25, MaxDuration: Duration(30 * time.Second)}})
	res := mustRun(t, steady, cfg)
	st := res.Stability
	if st == nil || !st.Converged || st.Windows < StabilityMinWindows || res.Duration.D() >= 30*time.Second || res.EndReason != EndCompleted {
		t.Fatalf("stability %+v after %v (%s)", st, res.Duration, res.EndReason)
	}
	cfg = fakeConfig(LoadConfig{Concurrency: 1, Stability: &StabilityConfig{Tolerance: 0.25, MaxDuration: Duration(300 * time.Millisecond)}})
	res = mustRun(t, steady, cfg)
	if st := res.Stability; st == nil || st.Converged || !strings.HasPrefix(st.Reason, "not converged") {
		t.Fatalf("capped run: %+v", st)
	}
	if EvaluateThresholds(res, nil); Judge(res).Status != verdict.Inconclusive {
		t.Errorf("an unconverged run: verdict %+v", Judge(res))
	}
}

func TestAbortOnFail(t *testing.T) {
	cfg := fakeConfig(LoadConfig{Concurrency: 2, Duration: Duration(time.Minute)})
	cfg.Thresholds = ths("p50<1ms")
	cfg.AbortOnFail = true
	res := mustRun(t, fixedTarget{delay: 3 * time.Millisecond}, cfg)
	if res.EndReason != EndAborted || res.Duration.D() >= time.Minute || !strings.Contains(res.Error, "p50<1ms") {
		t.Fatalf("end %s after %v: %s", res.EndReason, res.Duration, res.Error)
	}
	if EvaluateThresholds(res, cfg.Thresholds); Judge(res).Status != verdict.Failed {
		t.Errorf("an aborted run: verdict %+v", Judge(res))
	}
	// A failing request rate aborts too (the default bound).
	cfg = fakeConfig(LoadConfig{Concurrency: 1, Duration: Duration(time.Minute)})
	cfg.AbortOnFail = true
	res = mustRun(t, fixedTarget{delay: time.Millisecond, err: func(uint64) error { return &HTTPStatusError{Status: 503} }}, cfg)
	if res.EndReason != EndAborted || res.Errors["http_503"] == 0 || len(res.ErrorSamples["http_503"]) != 1 {
		t.Fatalf("end %s, errors %v, samples %v", res.EndReason, res.Errors, res.ErrorSamples)
	}
}

// A step profile is reported per step, each with its own histograms.
func TestRateProfileSteps(t *testing.T) {
	cfg := fakeConfig(LoadConfig{Rate: rateOf("step:100:300:100:600ms"), Duration: Duration(1800 * time.Millisecond),
		Interval: Duration(200 * time.Millisecond)})
	res := mustRun(t, fixedTarget{}, cfg)
	if len(res.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(res.Steps))
	}
	var sent, scheduled int64
	for i, s := range res.Steps {
		// Dispatches are counted between the collector's interval closes,
		// which a loaded machine wakes late, so a step's own count is not
		// asserted (no timed assertions); the whole run's schedule is exact.
		want := float64(100 * (i + 1))
		if s.Kind != StepProfile || s.Rate != want || s.Counts.Sent <= 0 {
			t.Errorf("step %d: rate %v, sent %d; want %v/s and some requests", i, s.Rate, s.Counts.Sent, want)
		}
		scheduled += s.Counts.Scheduled
		if s.Histograms.Response.Count() != s.Counts.OK {
			t.Errorf("step %d: %d values for %d requests", i, s.Histograms.Response.Count(), s.Counts.OK)
		}
		sent += s.Counts.Sent
	}
	if sent != res.Counts.Sent {
		t.Errorf("steps sent %d, the run %d", sent, res.Counts.Sent)
	}
	// 0.6 s at 100, 200 and 300 per second: the pacer schedules by intended
	// time, so a late machine sends late, never fewer.
	if scheduled != 360 || res.Counts.Scheduled != 360 {
		t.Errorf("steps scheduled %d, the run %d (%+v); want 360", scheduled, res.Counts.Scheduled, res.Counts)
	}
	if got := (RateProfile{}).steps(time.Second, time.Second); got != nil {
		t.Errorf("an empty profile has steps %v", got)
	}
	if lin := mustRate(t, "linear:100:1000:10s").steps(12*time.Second, time.Second); len(lin) != 11 || lin[10].rate != 1000 {
		t.Errorf("a 10s ramp and its hold: %d steps %+v", len(lin), lin)
	}
}

func TestRequestCount(t *testing.T) {
	cfg := fakeConfig(LoadConfig{Concurrency: 3, Requests: 50})
	res := mustRun(t, fixedTarget{}, cfg)
	if res.Counts.Sent != 50 || res.Counts.Completed != 50 {
		t.Errorf("-n 50: sent %d, completed %d", res.Counts.Sent, res.Counts.Completed)
	}
}

// One late wake-up of a quiet dispatcher is not a generator that cannot
// keep up: the send-lag p99 counts only with enough late requests.
func TestGeneratorBoundNeedsLateRequests(t *testing.T) {
	c := Checks{LagTolerance: Duration(2 * time.Millisecond), RateTolerance: 0.01, DispatchRatio: 1,
		SendLagP99: int64(3 * time.Millisecond), LateSends: 1}
	c.evaluate(true)
	if c.GeneratorBound {
		t.Errorf("one late request out of a few: %v", c.Reasons)
	}
	c.LateSends = minLateSends
	c.evaluate(true)
	if !c.GeneratorBound || !strings.Contains(c.Reasons[0], "10 requests sent later") {
		t.Errorf("ten late requests: %+v", c)
	}
	h := NewHistogram()
	for _, v := range []int64{1, 5, 10, 3000, 4000} {
		h.Record(v)
	}
	if n := h.countAbove(10); n != 2 {
		t.Errorf("countAbove(10) = %d, want 2", n)
	}
}
