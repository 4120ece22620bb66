package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// StepKind says what a row of Result.Steps is.
type StepKind string

// The step kinds.
const (
	// StepLevel is one level of a sweep (Load.ConcurrencyRange,
	// Load.RateRange), measured on its own: its own warm-up, window and
	// histograms.
	StepLevel StepKind = "level"
	// StepProbe is one measurement of an SLO search.
	StepProbe StepKind = "probe"
	// StepProfile is one step of a step or linear rate profile, cut out of one
	// continuous run: a request belongs to the step in which it completed,
	// as it belongs to an interval.
	StepProfile StepKind = "step"
)

// A Step is one row of a sweep, search or stepped profile, with its own
// counts and histograms.
type Step struct {
	Kind StepKind `json:"kind"`
	// Concurrency (closed loop) or Rate (open loop: the requested rate,
	// averaged over the step for a ramp) is the step's load.
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	// Start is when the step's measurement began, in seconds since the
	// first step's (the x axis of Result.Intervals).
	Start     float64     `json:"start"`
	Duration  Duration    `json:"duration"`
	Elapsed   Duration    `json:"elapsed"`
	EndReason EndReason   `json:"endReason,omitempty"`
	Warmup    WarmupStats `json:"warmup"`

	Counts       Counts              `json:"counts"`
	Rates        Rates               `json:"rates"`
	Errors       map[string]int64    `json:"errors,omitempty"`
	ErrorSamples map[string][]string `json:"errorSamples,omitempty"`
	Latency      LatencySummaries    `json:"latency"`
	Histograms   Histograms          `json:"histograms"`
	// GeneratorBound and Reasons are the step's generator self-check.
	GeneratorBound bool              `json:"generatorBound,omitempty"`
	Reasons        []string          `json:"reasons,omitempty"`
	Stability      *Stability        `json:"stability,omitempty"`
	Thresholds     []ThresholdResult `json:"thresholds,omitempty"`
	// Verdict is a probe's outcome: "holds", "fails" or "inconclusive".
	Verdict string `json:"verdict,omitempty"`
	// Why explains a verdict other than "holds".
	Why    string           `json:"why,omitempty"`
	Server *ServerBreakdown `json:"server,omitempty"`
}

// Label names the step's load: "c=8", "500/s".
func (s *Step) Label() string {
	if s.Concurrency > 0 {
		return "c=" + strconv.Itoa(s.Concurrency)
	}
	return FormatRate(s.Rate) + "/s"
}

// ErrorRate is the fraction of the step's completed requests that failed.
func (s *Step) ErrorRate() float64 { return errorRate(s.Counts) }

func FormatRate(r float64) string {
	switch {
	case r == math.Trunc(r):
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}

// stepOf summarizes a whole run as a step starting at start seconds.
func StepOf(r *Result, kind StepKind, start float64) Step {
	s := Step{
		Kind: kind, Start: start, Duration: r.Duration, Elapsed: r.Elapsed, Warmup: r.Warmup,
		Counts: r.Counts, Rates: r.Rates, Errors: r.Errors, ErrorSamples: r.ErrorSamples,
		Latency: r.Latency, Histograms: r.Histograms, Stability: r.Stability, Server: r.Server,
		GeneratorBound: r.Checks.GeneratorBound, Reasons: r.Checks.Reasons,
	}
	if r.EndReason != EndCompleted {
		s.EndReason = r.EndReason
	}
	if r.OpenLoop() {
		s.Rate = r.Rates.Requested
		if p := r.Config.Load.Rate; !p.IsZero() && p.constant() {
			s.Rate = p.Rate(0) // the level as asked, not as averaged
		}
	} else {
		s.Concurrency = r.Config.Load.Concurrency
	}
	return s
}

// profileStep is one step of a rate profile over a measured window.
type profileStep struct {
	start, end time.Duration
	rate       float64 // mean requested rate over the step
}

// linearSlices is how many steps a linear ramp is reported in.
const linearSlices = 10

// steps cuts the profile into the steps reported over a window of length
// dur: one per level of a step profile, linearSlices equal slices of a
// linear ramp (rounded to whole intervals) and its hold, none for a
// constant rate.
func (p RateProfile) steps(dur, interval time.Duration) []profileStep {
	if !p.Valid() || p.constant() || dur <= 0 {
		return nil
	}
	var cuts []time.Duration // step boundaries after 0
	for i, g := range p.segs {
		if i == 0 {
			continue
		}
		prev := p.segs[i-1]
		if prev.from != prev.to { // a ramp: slice it
			length := time.Duration(prev.length * 1e9)
			slice := max(interval, (length / linearSlices).Round(interval))
			for c := time.Duration(prev.start*1e9) + slice; c < time.Duration(g.start*1e9)-slice/2; c += slice {
				cuts = append(cuts, c)
			}
		}
		cuts = append(cuts, time.Duration(g.start*1e9))
	}
	var out []profileStep
	from := time.Duration(0)
	for _, c := range append(cuts, dur) {
		if c > dur {
			c = dur
		}
		if c <= from {
			continue
		}
		out = append(out, profileStep{start: from, end: c, rate: (p.Expected(c) - p.Expected(from)) / (c - from).Seconds()})
		from = c
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// pacerSteps are the reported steps of a rate profile's pacing (see
// steps); none for a pacer of one's own.
func pacerSteps(p Pacer, dur, interval time.Duration) []profileStep {
	switch p := p.(type) {
	case RateProfile:
		return p.steps(dur, interval)
	case Poisson:
		return p.Profile.steps(dur, interval)
	}
	return nil
}

// constant reports whether the profile is a single constant rate.
func (p RateProfile) constant() bool {
	return len(p.segs) == 1 && p.segs[0].from == p.segs[0].to
}

// describeLevel is a level for messages: "concurrency 8", "rate 500/s".
func DescribeLevel(concurrency int, rate float64) string {
	if concurrency > 0 {
		return fmt.Sprintf("concurrency %d", concurrency)
	}
	return fmt.Sprintf("rate %s/s", FormatRate(rate))
}

// Knee returns the index of the sweep level or profile step at the knee of
// the throughput/latency curve, or -1. The knee is where Kleinrock's power
// — throughput divided by mean response time — peaks: below it, more load
// buys throughput almost free of latency; above it, latency grows faster
// than throughput. Generator-bound steps and steps without successful
// requests are skipped, and a curve of fewer than three steps has no knee.
func Knee(steps []Step) int {
	best, at, n := 0.0, -1, 0
	for i, s := range steps {
		if s.Kind == StepProbe || s.GeneratorBound || s.Counts.OK == 0 {
			continue
		}
		n++
		mean := s.Histograms.Response.Mean().Seconds()
		if mean <= 0 {
			continue
		}
		if power := s.Rates.Completed / mean; power > best {
			best, at = power, i
		}
	}
	if n < 3 {
		return -1
	}
	return at
}
