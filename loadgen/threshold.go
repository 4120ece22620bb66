package loadgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Threshold is a CI gate on a result, written METRIC OP VALUE:
//
//	p99<20ms  p99.9<=50ms  service_p50<5ms  send_lag_p99<1ms  max<1s  mean<10ms
//	error_rate<0.1%  rps>1000  offered_rps>=990  dropped<=0  timeouts==0
//
// Latency metrics are pNN, max and mean of the response time, optionally
// prefixed response_, service_ or send_lag_ for the other histograms, and
// in a streaming run first_response_ (time to first response) or
// inter_response_;
// their values are Go durations. error_rate is (errors+timeouts)/completed,
// as a fraction or a percentage. rps is the completed rate and offered_rps
// the offered rate, in requests per second. dropped, timeouts and errors
// are counts. Operators: < <= > >= ==.
//
// k6's spellings are accepted too: p(95)<500ms, avg, med and min, and a
// latency without a unit is in milliseconds as in k6 (p(95)<500).
type Threshold struct {
	Text   string // the expression without blanks, as verdicts name it
	src    string // the expression as given, as the configuration records it
	metric string // the metric without its histogram prefix
	hist   string // response, service or send_lag for latency metrics
	op     string
	value  float64 // nanoseconds for latencies
}

// ResponseTimeBound returns the bound of a threshold that caps a response
// time (p99<20ms, max<=1s), for a chart to draw it.
func (t Threshold) ResponseTimeBound() (time.Duration, bool) {
	if t.hist != "response" || !isLatencyMetric(t.metric) || (t.op != "<" && t.op != "<=") {
		return 0, false
	}
	return time.Duration(t.value), true
}

// Percentile returns the percentile a latency threshold bounds (99.9 for
// p99.9<20ms); false for other metrics.
func (t Threshold) Percentile() (float64, bool) { return percentileOf(t.metric) }

// HistogramIn returns the histogram of h the threshold reads, nil for
// one on counts or rates.
func (t Threshold) HistogramIn(h Histograms) *Histogram { return h.named(t.hist) }

// ThresholdResult is a threshold's verdict on a result.
type ThresholdResult struct {
	Threshold string  `json:"threshold"`
	Actual    float64 `json:"actual"`     // in the threshold's unit (ns, fraction, req/s or count)
	ActualStr string  `json:"actualText"` // human form, e.g. "18.2ms"
	Pass      bool    `json:"pass"`
	// Default marks the default failed-request bound (not a Config.Thresholds).
	Default bool `json:"default,omitempty"`
	// Level names the sweep level the verdict is about ("c=8", "500/s");
	// empty for the whole run.
	Level string `json:"level,omitempty"`
}

// histPrefixes name the histograms a latency threshold can be on (the
// response time without one); first_response_ and inter_response_ need a
// streaming run.
var histPrefixes = []string{"response_", "service_", "send_lag_", "first_response_", "inter_response_"}

// named returns the histogram a threshold's prefix names (nil for a
// streaming histogram of a run that did not stream).
func (h Histograms) named(name string) *Histogram {
	switch name {
	case "service":
		return h.Service
	case "send_lag":
		return h.SendLag
	case "first_response":
		return h.FirstResponse
	case "inter_response":
		return h.InterResponse
	}
	return h.Response
}

var thresholdOps = []string{"<=", ">=", "==", "<", ">"} // two-character operators first

// ParseThresholds parses threshold expressions; the error names the first
// that does not parse.
func ParseThresholds(exprs []string) ([]Threshold, error) {
	var ts []Threshold
	for _, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// String is the expression as given.
func (t Threshold) String() string { return t.src }

// MarshalText writes the expression as given, so that a configuration
// reads back as it was written.
func (t Threshold) MarshalText() ([]byte, error) { return []byte(t.src), nil }

// UnmarshalText parses an expression.
func (t *Threshold) UnmarshalText(b []byte) error {
	v, err := ParseThreshold(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ThresholdTexts are the expressions of ts as given.
func ThresholdTexts(ts []Threshold) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.src
	}
	return out
}

// ParseThreshold parses a threshold expression.
func ParseThreshold(s string) (Threshold, error) {
	text := strings.Join(strings.Fields(s), "")
	t := Threshold{Text: text, src: s}
	text = k6Spelling(text)
	var lhs, rhs string
	for _, op := range thresholdOps {
		if i := strings.Index(text, op); i > 0 {
			t.op, lhs, rhs = op, text[:i], text[i+len(op):]
			break
		}
	}
	if t.op == "" || rhs == "" {
		return Threshold{}, fmt.Errorf("threshold %q: want METRIC OP VALUE, e.g. p99<20ms", s)
	}
	t.hist = "response"
	for _, p := range histPrefixes {
		if strings.HasPrefix(lhs, p) {
			t.hist, lhs = strings.TrimSuffix(p, "_"), strings.TrimPrefix(lhs, p)
			break
		}
	}
	t.metric = lhs
	switch {
	case isLatencyMetric(lhs):
		if v, err := strconv.ParseFloat(rhs, 64); err == nil && v >= 0 {
			rhs += "ms" // k6: a latency without a unit is in milliseconds
		}
		d, err := time.ParseDuration(rhs)
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: %s needs a duration such as 20ms: %w", s, lhs, err)
		}
		t.value = float64(d)
		return t, nil
	case t.hist != "response" || strings.HasPrefix(text, "response_"):
		return Threshold{}, fmt.Errorf("threshold %q: %s is not a latency metric (pNN, max, mean, min)", s, lhs)
	case lhs == "error_rate":
		v, err := parseFraction(rhs)
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: %w", s, err)
		}
		t.value = v
	case lhs == "rps" || lhs == "offered_rps" || lhs == "dropped" || lhs == "timeouts" || lhs == "errors":
		v, err := strconv.ParseFloat(rhs, 64)
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: %q is not a number", s, rhs)
		}
		t.value = v
	default:
		return Threshold{}, fmt.Errorf("threshold %q: unknown metric %q (want pNN, p(NN), max, mean, min, error_rate, rps, offered_rps, dropped, timeouts, errors)", s, lhs)
	}
	return t, nil
}

// k6Spelling rewrites k6's trend-metric names into oipkit's: p(95) is p95,
// avg mean, med p50 (min is the same).
func k6Spelling(text string) string {
	for {
		i := strings.Index(text, "p(")
		j := strings.IndexByte(text, ')')
		if i < 0 || j < i {
			break
		}
		text = text[:i] + "p" + text[i+2:j] + text[j+1:]
	}
	for _, op := range thresholdOps {
		if i := strings.Index(text, op); i > 0 {
			lhs := text[:i]
			base := lhs
			prefix := ""
			for _, p := range histPrefixes {
				if strings.HasPrefix(lhs, p) {
					prefix, base = p, strings.TrimPrefix(lhs, p)
				}
			}
			switch base {
			case "avg":
				base = "mean"
			case "med":
				base = "p50"
			}
			return prefix + base + text[i:]
		}
	}
	return text
}

// boundsFailures reports whether the threshold bounds failed requests, so
// that the default failed-request bound gives way to it.
func (t Threshold) boundsFailures() bool {
	return t.metric == "error_rate" || t.metric == "errors" || t.metric == "timeouts"
}

func isLatencyMetric(m string) bool {
	if m == "max" || m == "mean" || m == "min" {
		return true
	}
	q, ok := percentileOf(m)
	return ok && q > 0 && q <= 100
}

// percentileOf parses "p99.9" as 99.9.
func percentileOf(m string) (float64, bool) {
	if !strings.HasPrefix(m, "p") {
		return 0, false
	}
	q, err := strconv.ParseFloat(m[1:], 64)
	return q, err == nil
}

func parseFraction(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a fraction or a percentage", s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}

// Eval evaluates the threshold on r's merged histograms and counts.
func (t Threshold) Eval(r *Result) ThresholdResult { return t.evalOn(r.measures()) }

func (t Threshold) evalOn(r measures) ThresholdResult {
	var actual float64
	var text string
	if isLatencyMetric(t.metric) {
		h := r.h.named(t.hist)
		if h == nil {
			h = NewHistogram() // a streaming metric of a run that did not stream (refused by Normalize)
		}
		var d time.Duration
		switch t.metric {
		case "max":
			d = h.Max()
		case "min":
			d = h.Min()
		case "mean":
			d = h.Mean()
		default:
			q, _ := percentileOf(t.metric)
			d = h.Quantile(q)
		}
		actual, text = float64(d), FormatDuration(d)
	} else {
		switch t.metric {
		case "error_rate":
			actual = errorRate(r.counts)
			text = fmt.Sprintf("%.4g%%", 100*actual)
		case "rps":
			actual = r.rates.Completed
		case "offered_rps":
			actual = r.rates.Offered
		case "dropped":
			actual = float64(r.counts.Dropped)
		case "timeouts":
			actual = float64(r.counts.Timeouts)
		case "errors":
			actual = float64(r.counts.Errors)
		}
		if text == "" {
			text = strconv.FormatFloat(actual, 'f', -1, 64)
			if strings.HasSuffix(t.metric, "rps") {
				text = fmt.Sprintf("%.1f/s", actual)
			}
		}
	}
	var pass bool
	switch t.op {
	case "<":
		pass = actual < t.value
	case "<=":
		pass = actual <= t.value
	case ">":
		pass = actual > t.value
	case ">=":
		pass = actual >= t.value
	case "==":
		pass = actual == t.value
	}
	return ThresholdResult{Threshold: t.Text, Actual: actual, ActualStr: text, Pass: pass}
}

// EvaluateThresholds evaluates exprs and the default failed-request bound
// (r.Config.Checks.MaxErrorRate, unless one of exprs bounds failures) on r,
// stores the verdicts in r.Thresholds and reports whether all passed. A
// sweep is judged level by level: every level must pass, and each verdict
// names its level. Other results are judged on their top-level figures
// (for an SLO search, the level that held).
func EvaluateThresholds(r *Result, exprs []Threshold) bool {
	cfg := Config{Thresholds: exprs, Checks: r.Config.Checks}
	gates := cfg.Gates()
	r.Thresholds = nil
	all := true
	levels := false
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Kind != StepLevel {
			continue
		}
		levels = true
		all = s.Judge(exprs, gates) && all
		for _, v := range s.Thresholds {
			v.Level = s.Label()
			r.Thresholds = append(r.Thresholds, v)
		}
	}
	if levels {
		return all
	}
	m := r.measures()
	for _, t := range gates {
		v := t.evalOn(m)
		v.Default = !slices.Contains(exprs, t)
		r.Thresholds = append(r.Thresholds, v)
		all = all && v.Pass
	}
	return all
}

// ThresholdGroup is one threshold's verdicts over the levels of a sweep
// (or its single verdict on a run).
type ThresholdGroup struct {
	Threshold string
	Default   bool
	Levels    int      // verdicts in the group
	Failed    []string // "c=16 (6.1ms)", or the actual value of a run
	Actual    string   // the actual value of a single verdict
}

// Pass reports whether every verdict of the group passed.
func (g ThresholdGroup) Pass() bool { return len(g.Failed) == 0 }

// GroupThresholds folds per-level verdicts by threshold, in order.
func GroupThresholds(ts []ThresholdResult) []ThresholdGroup {
	var out []ThresholdGroup
	index := map[string]int{}
	for _, t := range ts {
		i, ok := index[t.Threshold]
		if !ok {
			i = len(out)
			index[t.Threshold] = i
			out = append(out, ThresholdGroup{Threshold: t.Threshold, Default: t.Default})
		}
		g := &out[i]
		g.Levels++
		g.Actual = t.ActualStr
		if !t.Pass {
			if t.Level != "" {
				g.Failed = append(g.Failed, t.Level+" ("+t.ActualStr+")")
			} else {
				g.Failed = append(g.Failed, t.ActualStr)
			}
		}
	}
	return out
}

// Describe is the group's verdict in words: "actual 0.2%", "at all 6
// levels", "failed at c=16 (6.1ms); passed at 5 of 6 levels".
func (g ThresholdGroup) Describe() string {
	switch {
	case g.Levels == 1 && g.Pass():
		return "actual " + g.Actual
	case g.Levels == 1:
		return "actual " + g.Failed[0]
	case g.Pass():
		return fmt.Sprintf("at all %d levels", g.Levels)
	}
	return fmt.Sprintf("failed at %s; passed at %d of %d levels", strings.Join(g.Failed, ", "), g.Levels-len(g.Failed), g.Levels)
}

// Judge evaluates gates on the step, stores the verdicts and reports
// whether all passed; gates not among user are the defaults.
func (s *Step) Judge(user, gates []Threshold) bool {
	s.Thresholds = nil
	pass := true
	for _, g := range gates {
		v := g.evalOn(s.measures())
		v.Default = !slices.Contains(user, g)
		s.Thresholds = append(s.Thresholds, v)
		pass = pass && v.Pass
	}
	return pass
}
