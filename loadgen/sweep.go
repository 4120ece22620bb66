package loadgen

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParseLevels parses a sweep range "START:END[:STEP]": the levels START,
// START+STEP, ... up to END, or with STEP "xF" (or "*F") START, START·F,
// START·F², ...; END is always the last level. STEP defaults to 1, as in
// perf_analyzer's --concurrency-range. integer asks for whole levels (a
// concurrency). At most MaxLevels levels.
func ParseLevels(spec string, integer bool) ([]float64, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("range %q: want START:END[:STEP], e.g. 1:32:x2 or 100:1000:100", spec)
	}
	num := func(what, s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return 0, fmt.Errorf("range %q: %s %q is not a number", spec, what, s)
		case v <= 0:
			return 0, fmt.Errorf("range %q: %s must be positive", spec, what)
		case integer && v != math.Trunc(v):
			return 0, fmt.Errorf("range %q: %s must be a whole number", spec, what)
		}
		return v, nil
	}
	start, err := num("start", parts[0])
	if err != nil {
		return nil, err
	}
	end, err := num("end", parts[1])
	if err != nil {
		return nil, err
	}
	if end < start {
		return nil, fmt.Errorf("range %q: the end is below the start", spec)
	}
	step, factor := 1.0, 0.0
	if len(parts) == 3 {
		s := strings.TrimSpace(parts[2])
		if f, ok := strings.CutPrefix(s, "x"); ok || strings.HasPrefix(s, "*") {
			if !ok {
				f = s[1:]
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v > 1) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("range %q: factor %q must be a number above 1", spec, s)
			}
			factor = v
		} else if step, err = num("step", s); err != nil {
			return nil, err
		}
	}
	var levels []float64
	for v, i := start, 0; v <= end*(1+1e-9); i++ {
		if len(levels) == MaxLevels {
			return nil, fmt.Errorf("range %q: more than %d levels; use a larger step or a factor (xF)", spec, MaxLevels)
		}
		if integer {
			v = math.Round(v)
		}
		if len(levels) == 0 || v > levels[len(levels)-1] {
			levels = append(levels, v)
		}
		if factor > 0 {
			v = start * math.Pow(factor, float64(i+1))
		} else {
			v = start + step*float64(i+1)
		}
	}
	if levels[len(levels)-1] < end {
		if len(levels) == MaxLevels {
			return nil, fmt.Errorf("range %q: more than %d levels; use a larger step or a factor (xF)", spec, MaxLevels)
		}
		levels = append(levels, end)
	}
	return levels, nil
}

// levelConfig is cfg set to one load level: a concurrency or a constant
// rate, with no sweep or search.
func levelConfig(cfg Config, concurrency int, rate float64) Config {
	l := cfg
	l.SLO, l.SLOResolution = nil, 0
	l.Load.ConcurrencyRange, l.Load.RateRange = "", ""
	l.Load.Concurrency, l.Load.Rate = 0, ""
	if concurrency > 0 {
		l.Load.Concurrency = concurrency
		l.Load.Arrival, l.Load.MaxInFlight = "", 0
	} else {
		l.Load.Rate = strconv.FormatFloat(rate, 'g', -1, 64)
		if l.Load.Arrival == "" {
			l.Load.Arrival = ArrivalConstant
		}
		if l.Load.MaxInFlight == 0 {
			l.Load.MaxInFlight = DefaultMaxInFlight
		}
	}
	return l
}

// levelRun runs one level and returns its result.
func levelRun(ctx context.Context, t Target, cfg Config, concurrency int, rate float64) *Result {
	lc := levelConfig(cfg, concurrency, rate)
	if err := lc.Normalize(); err != nil { // cannot happen: cfg was normalized
		return NewErrorResult(lc, nowWall(), err)
	}
	return runOnce(ctx, t, lc)
}

// sweep measures every level of the configured range on its own — its own
// warm-up, window and histograms — and returns a result whose Steps hold
// one row per level, whose Intervals run across all levels, and whose
// top-level figures are every level together. Thresholds (and the default
// failed-request bound) are judged on each level; with AbortOnFail the
// sweep stops at the first level that fails one.
func sweep(ctx context.Context, t Target, cfg Config) *Result {
	integer := cfg.Load.ConcurrencyRange != ""
	spec := cfg.Load.RateRange
	if integer {
		spec = cfg.Load.ConcurrencyRange
	}
	levels, _ := ParseLevels(spec, integer) // checked by Normalize
	var runs []*Result
	var steps []Step
	var intervals []IntervalStats
	end, why := EndCompleted, ""
	for _, v := range levels {
		c, rate := 0, v
		if integer {
			c, rate = int(v), 0
		}
		r := levelRun(ctx, t, cfg, c, rate)
		start := 0.0
		if len(runs) > 0 {
			start = r.Start.Sub(runs[0].Start).Seconds()
		}
		runs = append(runs, r)
		s := stepOf(r, StepLevel, start)
		pass := s.judge(cfg.Thresholds, cfg.gates())
		for _, iv := range r.Intervals {
			iv.Start += start
			iv.Step = len(steps)
			intervals = append(intervals, iv)
		}
		steps = append(steps, s)
		if cfg.StepDone != nil {
			cfg.StepDone(s)
		}
		if r.EndReason != EndCompleted {
			end, why = r.EndReason, fmt.Sprintf("%s: %s", describeLevel(c, rate), r.Error)
			break
		}
		if !pass && cfg.AbortOnFail {
			end, why = EndAborted, fmt.Sprintf("%s failed a threshold; the sweep stopped (--abort-on-fail)", describeLevel(c, rate))
			break
		}
	}
	m, _ := Merge(runs...)
	m.Config = redacted(cfg)
	m.MergedDiffer = nil
	m.Sources = nil
	m.Steps = steps
	m.Intervals = intervals
	m.EndReason, m.Error = end, why
	return m
}

// judge evaluates gates on the step, stores the verdicts and reports
// whether all passed; gates not among user are the defaults.
func (s *Step) judge(user, gates []string) bool {
	s.Thresholds = nil
	pass := true
	for _, g := range gates {
		th, err := ParseThreshold(g)
		if err != nil {
			continue // checked by Normalize
		}
		v := th.evalOn(s.measures())
		v.Default = !slices.Contains(user, g)
		s.Thresholds = append(s.Thresholds, v)
		pass = pass && v.Pass
	}
	return pass
}
