package loadgen

import (
	"fmt"
	"math"
	"time"
)

// StabilityConfig asks for a measurement that runs until its estimates are
// stable rather than for a fixed time. See [Stability] for the rule.
type StabilityConfig struct {
	// Tolerance is the largest acceptable half-width of the 95% confidence
	// intervals, relative to the estimate (0.05: ±5%).
	Tolerance float64 `json:"tolerance"`
	// MaxDuration caps the measurement (default 60s); a measurement that
	// has not converged by then ends unconverged.
	MaxDuration Duration `json:"maxDuration"`
}

// Stability rule constants.
const (
	DefaultStabilityTolerance = 0.05
	DefaultStabilityMax       = time.Minute
	// StabilityMinWindows is the fewest windows (intervals) a stable
	// estimate rests on.
	StabilityMinWindows = 5
	// stabilitySections is the most sections the percentile's spread is
	// estimated from, and stabilityMinSections the fewest.
	stabilitySections    = 10
	stabilityMinSections = 5
	// stabilitySectionTail is the fewest samples beyond the percentile a
	// section needs, so a run needs at least stabilityMinSections times
	// as many: 50 beyond p99 means 5,000 samples.
	stabilitySectionTail = 10
)

// Stability reports how a measurement under the stability rule ended.
//
// The rule, evaluated at the end of every window (reporting interval)
// once there are at least StabilityMinWindows: the run is stable when the
// 95% confidence intervals of both the throughput and the chosen latency
// percentile have a half-width within Tolerance of their estimate.
//
//   - Throughput: the windows' completion rates are treated as batch means;
//     the interval is mean ± t(0.975, k−1)·s/√k over the k windows.
//   - Latency percentile P: the estimate is P of all the window's
//     response times together. Its interval is the wider of two: the
//     distribution-free order-statistic interval (the values at ranks
//     n·p ± 1.96·√(n·p·(1−p)) of the n samples), which is right for
//     independent samples; and a sectioning interval, which also holds
//     when latencies are correlated in time (a GC pause, a noisy
//     neighbour): the windows are split into S contiguous sections, P is
//     computed in each, and the interval is ± t(0.975, S−1)·s/√S of those.
//     Sections need at least 10 samples beyond P each and there must be at
//     least 5 of them, so the percentile also has a minimum sample count:
//     50/(1−p) — 5,000 samples for p99, 50,000 for p99.9.
//
// A run that does not meet the rule within MaxDuration ends with
// Converged false and the intervals it reached; the CLI exits 4
// (inconclusive).
type Stability struct {
	Rule        string   `json:"rule"`
	Tolerance   float64  `json:"tolerance"`
	Percentile  float64  `json:"percentile"`
	Converged   bool     `json:"converged"`
	Windows     int      `json:"windows"`
	Samples     int64    `json:"samples"`
	TailSamples int64    `json:"tailSamples"` // samples beyond the percentile
	Sections    int      `json:"sections"`
	Throughput  Estimate `json:"throughput"` // requests per second
	Latency     Estimate `json:"latency"`    // nanoseconds
	Reason      string   `json:"reason"`
}

// Estimate is a value with its 95% confidence interval.
type Estimate struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// RelHalfWidth is the interval's half-width relative to the value (+Inf
// when there is none yet).
func (e Estimate) RelHalfWidth() float64 {
	if e.Value <= 0 || e.High < e.Low {
		return math.Inf(1)
	}
	return max(e.High-e.Value, e.Value-e.Low) / e.Value
}

// stabilityWindow is one full window's contribution to the rule.
type stabilityWindow struct {
	rate     float64
	response *Histogram
}

// stabilityJudge applies the rule to the windows seen so far.
type stabilityJudge struct {
	tol, pct float64
	windows  []stabilityWindow
}

func (j *stabilityJudge) rule() string {
	return fmt.Sprintf("95%% confidence intervals of throughput (batch means over windows) and p%s (the wider of order-statistic and sectioning intervals) within ±%s; at least %d windows and %d samples beyond p%s",
		FormatPercentile(j.pct), FormatPercent(j.tol), StabilityMinWindows, stabilityMinSections*stabilitySectionTail, FormatPercentile(j.pct))
}

// judge evaluates the rule over every window so far.
func (j *stabilityJudge) judge() Stability {
	s := Stability{Rule: j.rule(), Tolerance: j.tol, Percentile: j.pct, Windows: len(j.windows)}
	k := len(j.windows)
	if k == 0 {
		s.Reason = "no complete window"
		return s
	}
	// Throughput: batch means.
	var sum, sumSq float64
	for _, w := range j.windows {
		sum += w.rate
		sumSq += w.rate * w.rate
	}
	mean := sum / float64(k)
	s.Throughput = Estimate{Value: mean, Low: 0, High: math.Inf(1)}
	if k >= 2 {
		sd := math.Sqrt(max(0, (sumSq-float64(k)*mean*mean)/float64(k-1)))
		half := tQuantile975(k-1) * sd / math.Sqrt(float64(k))
		s.Throughput.Low, s.Throughput.High = mean-half, mean+half
	}

	// Latency: all windows together, then sections.
	all := NewHistogram()
	for _, w := range j.windows {
		all.Merge(w.response)
	}
	n := all.Count()
	p := j.pct / 100
	s.Samples = n
	s.TailSamples = int64(math.Floor(float64(n) * (1 - p)))
	q := float64(all.Quantile(j.pct))
	s.Latency = Estimate{Value: q, Low: 0, High: math.Inf(1)}
	sections := min(stabilitySections, k, int(s.TailSamples/stabilitySectionTail))
	s.Sections = max(sections, 0)
	if n > 0 && sections >= stabilityMinSections {
		// Order-statistic interval.
		z := 1.96 * math.Sqrt(float64(n)*p*(1-p))
		lo := float64(all.Quantile(100 * max(0, float64(n)*p-z) / float64(n)))
		hi := float64(all.Quantile(100 * min(float64(n), float64(n)*p+z) / float64(n)))
		half := max(q-lo, hi-q)
		// Sectioning interval.
		var qs []float64
		for i := range sections {
			sec := NewHistogram()
			for _, w := range j.windows[i*k/sections : (i+1)*k/sections] {
				sec.Merge(w.response)
			}
			qs = append(qs, float64(sec.Quantile(j.pct)))
		}
		var m, ss float64
		for _, v := range qs {
			m += v
		}
		m /= float64(len(qs))
		for _, v := range qs {
			ss += (v - m) * (v - m)
		}
		sd := math.Sqrt(ss / float64(len(qs)-1))
		half = max(half, tQuantile975(len(qs)-1)*sd/math.Sqrt(float64(len(qs))))
		s.Latency.Low, s.Latency.High = q-half, q+half
	}

	thr, lat := s.Throughput.RelHalfWidth(), s.Latency.RelHalfWidth()
	need := int64(math.Ceil(float64(stabilityMinSections*stabilitySectionTail)/(1-p) - 1e-6))
	switch {
	case k < StabilityMinWindows:
		s.Reason = fmt.Sprintf("%d of at least %d windows", k, StabilityMinWindows)
	case sections < stabilityMinSections:
		s.Reason = fmt.Sprintf("%d samples, p%s needs at least %d", n, FormatPercentile(j.pct), need)
	case thr > j.tol || lat > j.tol:
		s.Reason = fmt.Sprintf("throughput ±%s, p%s ±%s (target ±%s)", FormatPercent(thr), FormatPercentile(j.pct), FormatPercent(lat), FormatPercent(j.tol))
	default:
		s.Converged = true
		s.Reason = fmt.Sprintf("converged after %d windows: throughput ±%s, p%s ±%s", k, FormatPercent(thr), FormatPercentile(j.pct), FormatPercent(lat))
	}
	return s
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom,
// from a table, rounding df down (which widens the interval).
func tQuantile975(df int) float64 {
	table := []struct {
		df int
		t  float64
	}{
		{1, 12.706}, {2, 4.303}, {3, 3.182}, {4, 2.776}, {5, 2.571}, {6, 2.447}, {7, 2.365}, {8, 2.306},
		{9, 2.262}, {10, 2.228}, {11, 2.201}, {12, 2.179}, {13, 2.160}, {14, 2.145}, {15, 2.131},
		{16, 2.120}, {17, 2.110}, {18, 2.101}, {19, 2.093}, {20, 2.086}, {25, 2.060}, {30, 2.042},
		{40, 2.021}, {60, 2.000}, {120, 1.980},
	}
	if df < 1 {
		return math.Inf(1)
	}
	t := 1.960
	for i := len(table) - 1; i >= 0; i-- {
		if df >= table[i].df {
			if i == len(table)-1 && df > 120 {
				return t
			}
			return table[i].t
		}
	}
	return t
}

func FormatPercent(f float64) string {
	if math.IsInf(f, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g%%", 100*f)
}

func FormatPercentile(p float64) string { return fmt.Sprint(p) }
