package search

import (
	"context"
	"fmt"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/merge"

	"strconv"
	"time"
)

// levelConfig is cfg set to one load level: a concurrency or a constant
// rate, with no sweep or search.
func levelConfig(cfg loadgen.Config, concurrency int, rate float64) loadgen.Config {
	l := cfg
	l.SLO, l.SLOResolution = nil, 0
	l.Load.ConcurrencyRange, l.Load.RateRange = loadgen.Levels{}, loadgen.Levels{}
	l.Load.Concurrency, l.Load.Rate = 0, loadgen.RateProfile{}
	if concurrency > 0 {
		l.Load.Concurrency = concurrency
		l.Load.Arrival, l.Load.MaxInFlight = "", 0
	} else {
		// Spelled as a sweep level always was, so results read as before.
		l.Load.Rate, _ = loadgen.ParseRate(strconv.FormatFloat(rate, 'g', -1, 64)) // a positive level
		if l.Load.Arrival == "" {
			l.Load.Arrival = loadgen.ArrivalConstant
		}
		if l.Load.MaxInFlight == 0 {
			l.Load.MaxInFlight = loadgen.DefaultMaxInFlight
		}
	}
	return l
}

// levelRun runs one level through the engine's Run and returns its result.
func levelRun(ctx context.Context, t loadgen.Target, cfg loadgen.Config, concurrency int, rate float64) *loadgen.Result {
	lc := levelConfig(cfg, concurrency, rate)
	r, err := loadgen.Run(ctx, t, lc)
	if err != nil { // cannot happen: cfg was normalized
		return loadgen.NewErrorResult(lc, time.Now(), err)
	}
	return r
}

// sweep measures every level of the configured range on its own — its own
// warm-up, window and histograms — and returns a result whose Steps hold
// one row per level, whose Intervals run across all levels, and whose
// top-level figures are every level together. Thresholds (and the default
// failed-request bound) are judged on each level; with AbortOnFail the
// sweep stops at the first level that fails one.
func sweep(ctx context.Context, t loadgen.Target, cfg loadgen.Config) *loadgen.Result {
	integer := !cfg.Load.ConcurrencyRange.IsZero()
	spec := cfg.Load.RateRange
	if integer {
		spec = cfg.Load.ConcurrencyRange
	}
	levels := spec.Values()
	var runs []*loadgen.Result
	var steps []loadgen.Step
	var intervals []loadgen.IntervalStats
	end, why := loadgen.EndCompleted, ""
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
		s := loadgen.StepOf(r, loadgen.StepLevel, start)
		pass := s.Judge(cfg.Thresholds, cfg.Gates())
		for _, iv := range r.Intervals {
			iv.Start += start
			iv.Step = len(steps)
			intervals = append(intervals, iv)
		}
		steps = append(steps, s)
		if cfg.StepDone != nil {
			cfg.StepDone(s)
		}
		if r.EndReason != loadgen.EndCompleted {
			end, why = r.EndReason, fmt.Sprintf("%s: %s", loadgen.DescribeLevel(c, rate), r.Error)
			break
		}
		if !pass && cfg.AbortOnFail {
			end, why = loadgen.EndAborted, fmt.Sprintf("%s failed a threshold; the sweep stopped (Config.AbortOnFail)", loadgen.DescribeLevel(c, rate))
			break
		}
	}
	m, _ := merge.Merge(runs...)
	m.Config = loadgen.Redacted(cfg)
	m.MergedDiffer = nil
	m.Sources = nil
	m.Steps = steps
	m.Intervals = intervals
	m.EndReason, m.Error = end, why
	return m
}
