package search

import (
	"context"
	"errors"
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
	s := &searcher{ctx: ctx, t: t, cfg: cfg, passIdx: -1, failIdx: -1}
	s.out = &loadgen.SearchOutcome{SLO: loadgen.ThresholdTexts(cfg.SLO), Resolution: cfg.SLOResolution}
	s.closed = cfg.Load.Concurrency > 0 || !cfg.Load.ConcurrencyRange.IsZero()
	start := s.bounds()
	s.gates = append([]loadgen.Threshold(nil), cfg.SLO...)
	if g := (&loadgen.Config{Thresholds: cfg.SLO, Checks: cfg.Checks}).Gates(); len(g) > len(s.gates) {
		s.gates = g
	}
	if !s.closed && start == 0 {
		_, r := s.probe(1, true)
		// On the 1-2-5 grid, so that reruns whose calibrations differ by a
		// few percent probe the same levels and land on the same answer.
		start = max(s.lo, gridFloor(r.Rates.Completed))
		if r.Counts.OK == 0 {
			start = s.lo
		}
	}
	s.bracket(min(max(start, s.lo), s.hi))
	s.bisect()
	s.summarize()
	return s.result()
}

// searcher is the state of one SLO search: its bounds, its probes so far
// and the bracket they make.
type searcher struct {
	ctx    context.Context
	t      loadgen.Target
	cfg    loadgen.Config
	gates  []loadgen.Threshold // the SLOs, and the default failed-request bound unless they bound failures
	out    *loadgen.SearchOutcome
	closed bool    // a concurrency search
	lo, hi float64 // the search bounds

	runs      []*loadgen.Result
	steps     []loadgen.Step
	intervals []loadgen.IntervalStats

	pass, fail       float64 // highest holding, lowest failing level (0: none yet)
	passIdx, failIdx int
	limited          bool    // the lowest failing level was generator-bound
	unjudged         float64 // a level too low to have enough samples to judge
}

// bounds sets the search's mode and bounds and returns its start level (0:
// calibrate first).
func (s *searcher) bounds() (start float64) {
	l := s.cfg.Load
	if s.closed {
		s.out.Mode, s.lo, s.hi = "concurrency", 1, defaultMaxWorkers
		if lv := l.ConcurrencyRange.Values(); len(lv) > 0 {
			s.lo, s.hi = lv[0], lv[len(lv)-1]
		}
		start = max(s.lo, float64(l.Concurrency))
	} else {
		s.out.Mode, s.lo, s.hi = "rate", minRateSearchStart, defaultMaxRate
		if lv := l.RateRange.Values(); len(lv) > 0 {
			s.lo, s.hi = lv[0], lv[len(lv)-1]
			start = s.lo
		}
		if !l.Rate.IsZero() {
			start = l.Rate.Rate(0)
		}
	}
	s.out.Min, s.out.Max = s.lo, s.hi
	return start
}

// probe measures one level (a calibration: one closed-loop worker) and
// keeps it as a step with its verdict.
func (s *searcher) probe(level float64, calibration bool) (*loadgen.Step, *loadgen.Result) {
	c, rate := 0, level
	if s.closed || calibration {
		c, rate = int(level), 0
	}
	pc := s.cfg
	if rate > 0 && s.cfg.Load.Stability == nil {
		pc.Load.Duration = probeDuration(s.cfg, rate)
	}
	r := levelRun(s.ctx, s.t, pc, c, rate)
	start := 0.0
	if len(s.runs) > 0 {
		start = r.Start.Sub(s.runs[0].Start).Seconds()
	}
	st := loadgen.StepOf(r, loadgen.StepProbe, start)
	for _, iv := range r.Intervals {
		iv.Start += st.Start
		iv.Step = len(s.steps)
		s.intervals = append(s.intervals, iv)
	}
	s.judge(&st, r, calibration)
	s.steps = append(s.steps, st)
	s.runs = append(s.runs, r)
	if s.cfg.StepDone != nil {
		s.cfg.StepDone(st)
	}
	return &s.steps[len(s.steps)-1], r
}

// judge gives a probe its verdict: holds, fails, inconclusive (and why) or
// calibration.
func (s *searcher) judge(st *loadgen.Step, r *loadgen.Result, calibration bool) {
	switch pass := st.Judge(s.cfg.SLO, s.gates); {
	case calibration:
		st.Verdict = "calibration"
		st.Why = fmt.Sprintf("one closed-loop worker: the rate search starts at its throughput, %.0f/s, rounded down to 1, 2 or 5 times a power of ten", r.Rates.Completed)
	case r.EndReason != loadgen.EndCompleted:
		st.Verdict, st.Why = "inconclusive", fmt.Sprintf("ended %s: %s", r.EndReason, r.Error)
	case st.GeneratorBound:
		st.Verdict, st.Why = "inconclusive", "generator-bound: "+strings.Join(st.Reasons, "; ")
	case st.Stability != nil && !st.Stability.Converged:
		st.Verdict, st.Why = "inconclusive", "unstable: "+st.Stability.Reason
	case tooFewSamples(st, s.cfg.SLO) != "":
		st.Verdict, st.Why = "inconclusive", tooFewSamples(st, s.cfg.SLO)
	case pass:
		st.Verdict = "holds"
	default:
		st.Verdict, st.Why = "fails", failedGates(st.Thresholds)
	}
}

// stopped says the search must stop: interrupted, or a probe could not go
// on (the server stopped answering), so later probes would say nothing.
func (s *searcher) stopped() bool {
	return s.ctx.Err() != nil || (len(s.runs) > 0 && s.runs[len(s.runs)-1].EndReason == loadgen.EndError)
}

// try probes level and moves the bracket.
func (s *searcher) try(level float64) {
	st, _ := s.probe(level, false)
	switch {
	case st.Verdict == "holds":
		s.pass, s.passIdx = level, len(s.steps)-1
	case s.pass == 0 && st.Verdict == "inconclusive" && tooFewSamples(st, s.cfg.SLO) != "":
		// Descending, too few samples to judge, whatever else held it
		// back (a generator-bound probe too): lower levels have fewer
		// still, so going on down would only repeat this. Above a level
		// that held, such a probe counts as failing.
		s.unjudged = level
	default:
		s.fail, s.failIdx = level, len(s.steps)-1
		s.limited = st.Verdict == "inconclusive" && st.GeneratorBound
	}
}

// bracket probes from start, doubling while probes hold and halving while
// they fail, until a failing level sits above a holding one.
func (s *searcher) bracket(start float64) {
	if !s.stopped() {
		s.try(start)
	}
	for len(s.steps) < maxProbes && !s.stopped() && s.unjudged == 0 {
		switch {
		case s.pass > 0 && s.fail == 0: // going up
			if s.pass >= s.hi {
				return
			}
			s.try(min(s.hi, roundLevel(s.pass*2, s.closed)))
		case s.fail > 0 && s.pass == 0: // going down
			if s.fail <= s.lo {
				return
			}
			s.try(max(s.lo, roundLevel(s.fail/2, s.closed)))
		default:
			return
		}
	}
}

// bisect narrows the bracket to the resolution (for a concurrency, also
// until its ends are adjacent).
func (s *searcher) bisect() {
	for s.pass > 0 && s.fail > 0 && len(s.steps) < maxProbes && !s.stopped() {
		if s.fail <= s.pass*(1+s.cfg.SLOResolution) || (s.closed && s.fail-s.pass <= 1) {
			return
		}
		mid := roundLevel((s.pass+s.fail)/2, s.closed)
		if mid <= s.pass || mid >= s.fail {
			return
		}
		s.try(mid)
	}
}

// level names a level: "concurrency 8" or "500/s".
func (s *searcher) level(v float64) string {
	if s.closed {
		return "concurrency " + strconv.Itoa(int(v))
	}
	return loadgen.FormatRate(v) + "/s"
}

// summarize fills the outcome from the bracket.
func (s *searcher) summarize() {
	out, pass, fail := s.out, s.pass, s.fail
	out.Found, out.Holds, out.Fails, out.Limited = pass > 0, pass, fail, s.limited && fail > 0
	slo := strings.Join(loadgen.ThresholdTexts(s.cfg.SLO), " and ")
	bracket := func() string {
		switch {
		case fail == 0 && pass >= s.hi:
			return fmt.Sprintf("the search's upper bound %s held too", s.level(s.hi))
		case fail == 0:
			return "the search stopped before a level failed"
		case out.Limited:
			return fmt.Sprintf("the generator could not produce %s, so the server's limit is at least that", s.level(fail))
		}
		return fmt.Sprintf("%s failed; resolution %s", s.level(fail), loadgen.FormatPercent(s.cfg.SLOResolution))
	}
	switch probes := countProbes(s.steps); {
	case out.Found:
		out.Summary = fmt.Sprintf("%s holds %s (%s); %d probes", s.level(pass), slo, bracket(), probes)
	case fail > 0:
		why := "failed"
		if st := s.steps[s.failIdx]; st.Verdict == "inconclusive" {
			why = "did not hold (" + st.Why + ")"
		}
		out.Summary = fmt.Sprintf("no level holds %s: even %s %s; %d probes", slo, s.level(fail), why, probes)
		if s.unjudged > 0 {
			out.Summary += fmt.Sprintf(" (%s and below have too few samples to judge in Load.Duration)", s.level(s.unjudged))
		}
	case s.unjudged > 0:
		out.Unjudged = true
		out.Summary = fmt.Sprintf("no level could be judged: %s has too few samples for %s (a longer Load.Duration); %d probes",
			s.level(s.unjudged), slo, probes)
	default:
		out.Summary = "the search did not run"
	}
}

// result is the search's result: the best level's (else the last probe's)
// figures, every probe as a step, and the outcome.
func (s *searcher) result() *loadgen.Result {
	if len(s.runs) == 0 { // interrupted before the first probe
		return loadgen.NewErrorResult(s.cfg, time.Now(), errors.New("the search was interrupted before its first probe"))
	}
	best := s.runs[len(s.runs)-1]
	if s.passIdx >= 0 {
		best = s.runs[s.passIdx]
		s.out.Step = s.passIdx
	}
	res := *best
	res.Config = loadgen.Redacted(s.cfg)
	res.Steps = s.steps
	res.Intervals = s.intervals
	res.Search = s.out
	res.Start = s.runs[0].Start
	if last := s.runs[len(s.runs)-1]; last.EndReason == loadgen.EndError {
		res.EndReason, res.Error = loadgen.EndError, fmt.Sprintf("probe %d: %s", countProbes(s.steps), last.Error)
	}
	if err := s.ctx.Err(); err != nil {
		res.EndReason, res.Error = loadgen.EndCanceled, "the search was interrupted"
		if err == context.DeadlineExceeded {
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
	for _, t := range cfg.SLO {
		if q, ok := t.Percentile(); ok {
			need = max(need, math.Ceil(minTailSamples*100/(100-q)-1e-9))
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
func tooFewSamples(s *loadgen.Step, slo []loadgen.Threshold) string {
	for _, t := range slo {
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
