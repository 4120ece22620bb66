package search

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oipkit/oipkit/loadgen"
)

// Search bounds.
const (
	maxProbes          = 40
	defaultMaxRate     = 1e6
	defaultMaxWorkers  = 4096
	minRateSearchStart = 1
)

// search finds the highest load that holds every SLO. It probes a level
// (each probe a complete measurement: warm-up, window or stability rule,
// histograms), doubles the level while probes hold and halves it while
// they fail until one failing level sits above one holding level, then
// bisects between them until the failing level is within Resolution of the
// holding one (for a concurrency, also until they are adjacent). A probe
// holds when every SLO passes — plus the default failed-request bound when
// no SLO bounds failures — and the generator kept up; a generator-bound
// probe counts as failing, and the outcome says the bracket is the
// generator's.
//
// The search is open loop unless it is given a concurrency
// (Load.Concurrency as the start or Load.ConcurrencyRange as the bounds). An
// open-loop search without a start rate first measures one closed-loop
// worker and starts at that throughput.
func search(ctx context.Context, t loadgen.Target, cfg loadgen.Config) *loadgen.Result {
	out := &loadgen.SearchOutcome{SLO: cfg.SLO, Resolution: cfg.SLOResolution}
	closed := cfg.Load.Concurrency > 0 || cfg.Load.ConcurrencyRange != ""
	var lo, hi float64 // the search bounds
	start := 0.0
	if closed {
		out.Mode, lo, hi = "concurrency", 1, defaultMaxWorkers
		if l, err := loadgen.ParseLevels(cfg.Load.ConcurrencyRange, true); err == nil {
			lo, hi = l[0], l[len(l)-1]
		}
		start = max(lo, float64(cfg.Load.Concurrency))
	} else {
		out.Mode, lo, hi = "rate", minRateSearchStart, defaultMaxRate
		if l, err := loadgen.ParseLevels(cfg.Load.RateRange, false); err == nil {
			lo, hi = l[0], l[len(l)-1]
			start = lo
		}
		if cfg.Load.Rate != "" {
			if p, err := loadgen.ParseRate(cfg.Load.Rate); err == nil {
				start = p.Rate(0)
			}
		}
	}
	out.Min, out.Max = lo, hi
	gates := append([]string(nil), cfg.SLO...)
	if g := (&loadgen.Config{Thresholds: cfg.SLO, Checks: cfg.Checks}).Gates(); len(g) > len(gates) {
		gates = g
	}

	var runs []*loadgen.Result
	var steps []loadgen.Step
	var intervals []loadgen.IntervalStats
	var first *loadgen.Result
	probe := func(level float64, calibration bool) (*loadgen.Step, *loadgen.Result) {
		c, rate := 0, level
		if closed || calibration {
			c, rate = int(level), 0
		}
		pc := cfg
		if rate > 0 && cfg.Load.Stability == nil {
			pc.Load.Duration = probeDuration(cfg, rate)
		}
		r := levelRun(ctx, t, pc, c, rate)
		if first == nil {
			first = r
		}
		s := loadgen.StepOf(r, loadgen.StepProbe, r.Start.Sub(first.Start).Seconds())
		for _, iv := range r.Intervals {
			iv.Start += s.Start
			iv.Step = len(steps)
			intervals = append(intervals, iv)
		}
		switch pass := s.Judge(cfg.SLO, gates); {
		case calibration:
			s.Verdict = "calibration"
			s.Why = fmt.Sprintf("one closed-loop worker: the rate search starts at its throughput, %.0f/s, rounded down to 1, 2 or 5 times a power of ten", r.Rates.Completed)
		case r.EndReason != loadgen.EndCompleted:
			s.Verdict, s.Why = "inconclusive", fmt.Sprintf("ended %s: %s", r.EndReason, r.Error)
		case s.GeneratorBound:
			s.Verdict, s.Why = "inconclusive", "generator-bound: "+strings.Join(s.Reasons, "; ")
		case s.Stability != nil && !s.Stability.Converged:
			s.Verdict, s.Why = "inconclusive", "unstable: "+s.Stability.Reason
		case tooFewSamples(&s, cfg.SLO) != "":
			s.Verdict, s.Why = "inconclusive", tooFewSamples(&s, cfg.SLO)
		case pass:
			s.Verdict = "holds"
		default:
			s.Verdict, s.Why = "fails", failedGates(s.Thresholds)
		}
		steps = append(steps, s)
		runs = append(runs, r)
		if cfg.StepDone != nil {
			cfg.StepDone(s)
		}
		return &steps[len(steps)-1], r
	}
	// The search stops when interrupted or when a probe could not go on
	// (the server stopped answering): later probes would say nothing.
	stopped := func() bool {
		return ctx.Err() != nil || (len(runs) > 0 && runs[len(runs)-1].EndReason == loadgen.EndError)
	}

	if !closed && start == 0 {
		_, r := probe(1, true)
		// On the 1-2-5 grid, so that reruns whose calibrations differ by a
		// few percent probe the same levels and land on the same answer.
		start = max(lo, gridFloor(r.Rates.Completed))
		if r.Counts.OK == 0 {
			start = lo
		}
	}
	start = min(max(start, lo), hi)

	pass, fail := 0.0, 0.0 // highest holding, lowest failing (0: none yet)
	passIdx, failIdx := -1, -1
	limited := false
	unjudged := 0.0 // a level too low to have enough samples to judge
	try := func(level float64) {
		s, _ := probe(level, false)
		switch {
		case s.Verdict == "holds":
			pass, passIdx = level, len(steps)-1
		case pass == 0 && s.Verdict == "inconclusive" && tooFewSamples(s, cfg.SLO) != "":
			// Descending, too few samples to judge, whatever else held
			// it back (a generator-bound probe too): lower levels have
			// fewer still, so going on down would only repeat this.
			// Above a level that held, such a probe counts as failing.
			unjudged = level
		default:
			fail, failIdx = level, len(steps)-1
			limited = s.Verdict == "inconclusive" && s.GeneratorBound
		}
	}
	// Bracket.
	if !stopped() {
		try(start)
	}
	for len(steps) < maxProbes && !stopped() && unjudged == 0 {
		if pass > 0 && fail == 0 { // going up
			if pass >= hi {
				break
			}
			try(min(hi, roundLevel(pass*2, closed)))
			continue
		}
		if fail > 0 && pass == 0 { // going down
			next := roundLevel(fail/2, closed)
			if fail <= lo {
				break
			}
			try(max(lo, next))
			continue
		}
		break
	}
	// Bisect.
	for pass > 0 && fail > 0 && len(steps) < maxProbes && !stopped() {
		if fail <= pass*(1+cfg.SLOResolution) || (closed && fail-pass <= 1) {
			break
		}
		mid := roundLevel((pass+fail)/2, closed)
		if mid <= pass || mid >= fail {
			break
		}
		try(mid)
	}

	out.Found, out.Holds, out.Fails, out.Limited = pass > 0, pass, fail, limited && fail > 0
	unit := map[bool]string{true: "concurrency ", false: ""}[closed]
	level := func(v float64) string {
		if closed {
			return unit + strconv.Itoa(int(v))
		}
		return loadgen.FormatRate(v) + "/s"
	}
	bracket := func() string {
		switch {
		case fail == 0 && pass >= hi:
			return fmt.Sprintf("the search's upper bound %s held too", level(hi))
		case fail == 0:
			return "the search stopped before a level failed"
		case out.Limited:
			return fmt.Sprintf("the generator could not produce %s, so the server's limit is at least that", level(fail))
		}
		return fmt.Sprintf("%s failed; resolution %s", level(fail), loadgen.FormatPercent(cfg.SLOResolution))
	}
	switch {
	case out.Found:
		out.Summary = fmt.Sprintf("%s holds %s (%s); %d probes", level(pass), strings.Join(cfg.SLO, " and "), bracket(), countProbes(steps))
	case fail > 0:
		why := "failed"
		if st := steps[failIdx]; st.Verdict == "inconclusive" {
			why = "did not hold (" + st.Why + ")"
		}
		out.Summary = fmt.Sprintf("no level holds %s: even %s %s; %d probes", strings.Join(cfg.SLO, " and "), level(fail), why, countProbes(steps))
		if unjudged > 0 {
			out.Summary += fmt.Sprintf(" (%s and below have too few samples to judge in Load.Duration)", level(unjudged))
		}
	case unjudged > 0:
		out.Unjudged = true
		out.Summary = fmt.Sprintf("no level could be judged: %s has too few samples for %s (a longer Load.Duration); %d probes",
			level(unjudged), strings.Join(cfg.SLO, " and "), countProbes(steps))
	default:
		out.Summary = "the search did not run"
	}

	best := runs[len(runs)-1]
	if passIdx >= 0 {
		best = runs[passIdx]
		out.Step = passIdx
	}
	res := *best
	res.Config = loadgen.Redacted(cfg)
	res.Steps = steps
	res.Intervals = intervals
	res.Search = out
	res.Start = first.Start
	if last := runs[len(runs)-1]; last.EndReason == loadgen.EndError {
		res.EndReason, res.Error = loadgen.EndError, fmt.Sprintf("probe %d: %s", countProbes(steps), last.Error)
	}
	if ctx.Err() != nil {
		res.EndReason, res.Error = loadgen.EndCanceled, "the search was interrupted"
		if ctx.Err() == context.DeadlineExceeded {
			res.EndReason = loadgen.EndDeadline
		}
	}
	return &res
}

// maxProbeDuration caps how far a rate probe is lengthened for samples.
const maxProbeDuration = time.Minute

// probeDuration is how long an open-loop probe at rate lasts: Load.Duration,
// or longer when that would give too few samples to judge the SLOs'
// percentiles (10% over the count they need, for the Poisson count's
// spread), up to a minute — a search must not be too short to judge the
// levels it descends to.
func probeDuration(cfg loadgen.Config, rate float64) loadgen.Duration {
	d := cfg.Load.Duration.D()
	if cfg.Load.Requests > 0 {
		return cfg.Load.Duration // -n decides the sample count
	}
	need := 0.0
	for _, e := range cfg.SLO {
		if t, err := loadgen.ParseThreshold(e); err == nil {
			if q, ok := t.Percentile(); ok {
				need = max(need, math.Ceil(minTailSamples*100/(100-q)-1e-9))
			}
		}
	}
	want := time.Duration(1.1 * need / rate * float64(time.Second)).Round(time.Second)
	return loadgen.Duration(max(d, min(want, maxProbeDuration)))
}

// minTailSamples is how many samples a probe needs beyond an SLO's
// percentile to judge it (the text report's "*" mark): with fewer, the
// estimate is one of the last few samples, i.e. chance.
const minTailSamples = 10

// tooFewSamples says which percentile SLO the probe has too few samples to
// judge, or "".
func tooFewSamples(s *loadgen.Step, slo []string) string {
	for _, e := range slo {
		t, err := loadgen.ParseThreshold(e)
		if err != nil {
			continue
		}
		q, ok := t.Percentile()
		if !ok {
			continue
		}
		h := t.HistogramIn(s.Histograms)
		if h == nil {
			continue
		}
		need := int64(math.Ceil(minTailSamples*100/(100-q) - 1e-9))
		if n := h.Count(); n < need {
			return fmt.Sprintf("%d samples are too few to judge %s (it needs %d: a longer Load.Duration)", n, t.Text, need)
		}
	}
	return ""
}

// gridFloor rounds v down to 1, 2 or 5 times a power of ten (at least 1).
func gridFloor(v float64) float64 {
	if v < 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if v >= m*p {
			return m * p
		}
	}
	return p
}

// roundLevel rounds a probe level: a whole concurrency, or a rate to three
// significant digits (at least 1/s).
func roundLevel(v float64, integer bool) float64 {
	if integer {
		return math.Max(1, math.Round(v))
	}
	if v < 1 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v))-2)
	// Through the decimal form, so 29.7 is 29.7, not 29.700000000000003.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v/mag)*mag, 'g', 3, 64), 64)
	return r
}

func countProbes(steps []loadgen.Step) int {
	n := 0
	for _, s := range steps {
		if s.Verdict != "calibration" {
			n++
		}
	}
	return n
}

// failedGates lists the failed verdicts: "p99 6.1ms (p99<5ms)".
func failedGates(vs []loadgen.ThresholdResult) string {
	var out []string
	for _, v := range vs {
		if !v.Pass {
			out = append(out, fmt.Sprintf("%s is %s", v.Threshold, v.ActualStr))
		}
	}
	return strings.Join(out, ", ")
}
