package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// A Sample is one reading of the server process.
type Sample struct {
	T          float64 `json:"t"`            // seconds since the load started
	RSS        float64 `json:"rss_bytes"`    // VmRSS
	Files      float64 `json:"open_files"`   // entries of /proc/<pid>/fd
	Threads    float64 `json:"threads"`      // Threads of /proc/<pid>/status
	HeapInuse  float64 `json:"heap_inuse"`   // go_memstats_heap_inuse_bytes
	HeapObj    float64 `json:"heap_objects"` // go_memstats_heap_objects
	Goroutines float64 `json:"goroutines"`   // go_goroutines
	Requests   float64 `json:"requests"`     // requests sent so far, every workload
}

// A Rule bounds one series. A trend rule fits a least-squares line to the
// samples after the warm-up and fails when its slope, projected to one
// hour, exceeds max(PerHourFraction × the fitted level at the warm-up's
// end, PerHour) and the rise it fits over the measured window also exceeds
// max(4 × that rise's standard error, Floor): a leak must be both steep and
// distinguishable from the series' own noise (a 2-minute run projects 90
// seconds of samples forty-fold; a GC sawtooth is noise). A level rule
// fails when the median of the last quarter of the samples exceeds the
// warm-up's median plus Slack: a count that settles stays where the
// warm-up had it, and medians let a burst of in-flight work caught by one
// sample pass. A rule with neither is reported, not judged.
type Rule struct {
	Name, Unit      string
	Of              func(Sample) float64 `json:"-"`
	PerHour         float64              // trend: absolute growth per hour
	PerHourFraction float64              // trend: growth per hour relative to the level
	Floor           float64              // trend: smallest rise over the window that can fail
	Slack           float64              // level: allowed rise over the warm-up's median
}

func (r Rule) trend() bool { return r.PerHour > 0 || r.PerHourFraction > 0 }
func (r Rule) level() bool { return r.Slack > 0 }

// Rules are the soak's bounds, stated in the package doc and printed with
// every verdict. The floors are the hourly bounds over the 24-minute
// window of a 30-minute run (20 MiB/h makes 8 MiB): a short run fails only
// on a rise the long run would fail on, not on the few MiB a Go process's
// RSS takes to settle in its first minutes.
var Rules = []Rule{
	{Name: "rss", Unit: "bytes", Of: func(s Sample) float64 { return s.RSS },
		PerHour: 20 << 20, PerHourFraction: 0.10, Floor: 8 << 20},
	{Name: "heap_inuse", Unit: "bytes", Of: func(s Sample) float64 { return s.HeapInuse },
		PerHour: 10 << 20, PerHourFraction: 0.10, Floor: 4 << 20},
	{Name: "goroutines", Unit: "count", Of: func(s Sample) float64 { return s.Goroutines }, Slack: 20},
	{Name: "open_files", Unit: "count", Of: func(s Sample) float64 { return s.Files }, Slack: 10},
	{Name: "threads", Unit: "count", Of: func(s Sample) float64 { return s.Threads }},
	{Name: "heap_objects", Unit: "count", Of: func(s Sample) float64 { return s.HeapObj }},
}

// A Verdict is one rule's decision.
type Verdict struct {
	Series string `json:"series"`
	Unit   string `json:"unit"`
	Judged bool   `json:"judged"`
	Pass   bool   `json:"pass"`
	// SlopePerHour is the fitted slope after the warm-up, per hour.
	SlopePerHour float64 `json:"slope_per_hour"`
	// Level is the fitted value at the warm-up's end; Rise the fitted
	// growth over the measured window; RiseError its standard error.
	Level     float64 `json:"level"`
	Rise      float64 `json:"rise"`
	RiseError float64 `json:"rise_error"`
	// WarmupMedian and LateMedian are the level rule's figures.
	WarmupMedian float64 `json:"warmup_median"`
	LateMedian   float64 `json:"late_median"`
	// Bound says the rule with its figures; Detail what was measured.
	Bound  string `json:"bound"`
	Detail string `json:"detail"`
}

// WarmupOf is the warm-up of a run: its first 20%, at least 30 seconds.
func WarmupOf(run time.Duration) time.Duration { return max(run/5, 30*time.Second) }

// Decide applies every rule to samples (in time order) taken over a run
// whose warm-up ends warmup seconds in. It needs at least 4 samples after
// the warm-up; with fewer every judged rule fails.
func Decide(samples []Sample, warmup float64, rules []Rule) []Verdict {
	var warm, after []Sample
	for _, s := range samples {
		if s.T < warmup {
			warm = append(warm, s)
		} else {
			after = append(after, s)
		}
	}
	out := make([]Verdict, 0, len(rules))
	for _, r := range rules {
		v := Verdict{Series: r.Name, Unit: r.Unit, Judged: r.trend() || r.level(), Pass: true}
		if len(after) < 4 || len(warm) == 0 {
			v.Pass = !v.Judged
			v.Bound = "not enough samples"
			v.Detail = fmt.Sprintf("%d samples in the warm-up and %d after it; want at least 1 and 4", len(warm), len(after))
			out = append(out, v)
			continue
		}
		ts, ys := make([]float64, len(after)), make([]float64, len(after))
		for i, s := range after {
			ts[i], ys[i] = s.T, r.Of(s)
		}
		slope, intercept, slopeError := fit(ts, ys)
		window := ts[len(ts)-1] - ts[0]
		v.SlopePerHour = slope * 3600
		v.Level = intercept + slope*ts[0]
		v.Rise, v.RiseError = slope*window, slopeError*window
		v.WarmupMedian = median(mapOf(warm, r.Of))
		v.LateMedian = median(ys[len(ys)-max(len(ys)/4, 3):])
		v.Detail = fmt.Sprintf("slope %s/h, fitted rise %s ± %s over %.0f s from %s; warm-up median %s, last quarter's median %s",
			format(v.SlopePerHour, r.Unit), format(v.Rise, r.Unit), format(v.RiseError, r.Unit), window,
			format(v.Level, r.Unit), format(v.WarmupMedian, r.Unit), format(v.LateMedian, r.Unit))
		switch {
		case r.trend():
			limit := max(r.PerHourFraction*v.Level, r.PerHour)
			floor := max(4*v.RiseError, r.Floor)
			v.Pass = v.SlopePerHour <= limit || v.Rise <= floor
			v.Bound = fmt.Sprintf("fails when slope > max(%.0f%% of level, %s)/h = %s/h and fitted rise > max(4 × its error, %s) = %s",
				100*r.PerHourFraction, format(r.PerHour, r.Unit), format(limit, r.Unit), format(r.Floor, r.Unit), format(floor, r.Unit))
		case r.level():
			v.Pass = v.LateMedian <= v.WarmupMedian+r.Slack
			v.Bound = fmt.Sprintf("fails when the last quarter's median > warm-up median + %s = %s",
				format(r.Slack, r.Unit), format(v.WarmupMedian+r.Slack, r.Unit))
		default:
			v.Bound = "reported, not judged"
		}
		out = append(out, v)
	}
	return out
}

// fit is the least-squares line through (ts, ys) and its slope's standard
// error (residuals taken as independent).
func fit(ts, ys []float64) (slope, intercept, slopeError float64) {
	n := float64(len(ts))
	var mt, my float64
	for i := range ts {
		mt += ts[i]
		my += ys[i]
	}
	mt, my = mt/n, my/n
	var stt, sty float64
	for i := range ts {
		stt += (ts[i] - mt) * (ts[i] - mt)
		sty += (ts[i] - mt) * (ys[i] - my)
	}
	if stt > 0 {
		slope = sty / stt
	}
	intercept = my - slope*mt
	var ss float64
	for i := range ts {
		d := ys[i] - (intercept + slope*ts[i])
		ss += d * d
	}
	if stt > 0 && n > 2 {
		slopeError = math.Sqrt(ss / (n - 2) / stt)
	}
	return slope, intercept, slopeError
}

func mapOf(s []Sample, of func(Sample) float64) []float64 {
	out := make([]float64, len(s))
	for i := range s {
		out[i] = of(s[i])
	}
	return out
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// format writes a figure in its unit: bytes in MiB, counts as numbers.
func format(v float64, unit string) string {
	if unit == "bytes" {
		return fmt.Sprintf("%.2f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.1f", v)
}
