package loadgen

import (
	"fmt"
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
// prefixed response_, service_ or send_lag_ for the other histograms;
// their values are Go durations. error_rate is (errors+timeouts)/completed,
// as a fraction or a percentage. rps is the completed rate and offered_rps
// the offered rate, in requests per second. dropped, timeouts and errors
// are counts. Operators: < <= > >= ==.
type Threshold struct {
	Text   string
	metric string // the metric without its histogram prefix
	hist   string // response, service or send_lag for latency metrics
	op     string
	value  float64 // nanoseconds for latencies
}

// ThresholdResult is a threshold's verdict on a result.
type ThresholdResult struct {
	Threshold string  `json:"threshold"`
	Actual    float64 `json:"actual"`     // in the threshold's unit (ns, fraction, req/s or count)
	ActualStr string  `json:"actualText"` // human form, e.g. "18.2ms"
	Pass      bool    `json:"pass"`
}

var thresholdOps = []string{"<=", ">=", "==", "<", ">"} // two-character operators first

// ParseThreshold parses a threshold expression.
func ParseThreshold(s string) (Threshold, error) {
	text := strings.Join(strings.Fields(s), "")
	t := Threshold{Text: text}
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
	for _, p := range []string{"response_", "service_", "send_lag_"} {
		if strings.HasPrefix(lhs, p) {
			t.hist, lhs = strings.TrimSuffix(p, "_"), strings.TrimPrefix(lhs, p)
			break
		}
	}
	t.metric = lhs
	switch {
	case isLatencyMetric(lhs):
		d, err := time.ParseDuration(rhs)
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: %s needs a duration such as 20ms: %w", s, lhs, err)
		}
		t.value = float64(d)
		return t, nil
	case t.hist != "response" || strings.HasPrefix(text, "response_"):
		return Threshold{}, fmt.Errorf("threshold %q: %s is not a latency metric (pNN, max, mean)", s, lhs)
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
		return Threshold{}, fmt.Errorf("threshold %q: unknown metric %q (want pNN, max, mean, error_rate, rps, offered_rps, dropped, timeouts, errors)", s, lhs)
	}
	return t, nil
}

func isLatencyMetric(m string) bool {
	if m == "max" || m == "mean" {
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
func (t Threshold) Eval(r *Result) ThresholdResult {
	var actual float64
	var text string
	if isLatencyMetric(t.metric) {
		h := map[string]*Histogram{"response": r.Histograms.Response, "service": r.Histograms.Service, "send_lag": r.Histograms.SendLag}[t.hist]
		var d time.Duration
		switch t.metric {
		case "max":
			d = h.Max()
		case "mean":
			d = h.Mean()
		default:
			q, _ := percentileOf(t.metric)
			d = h.Quantile(q)
		}
		actual, text = float64(d), formatDuration(d)
	} else {
		switch t.metric {
		case "error_rate":
			actual = r.ErrorRate()
			text = fmt.Sprintf("%.4g%%", 100*actual)
		case "rps":
			actual = r.Rates.Completed
		case "offered_rps":
			actual = r.Rates.Offered
		case "dropped":
			actual = float64(r.Counts.Dropped)
		case "timeouts":
			actual = float64(r.Counts.Timeouts)
		case "errors":
			actual = float64(r.Counts.Errors)
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

// EvaluateThresholds parses and evaluates every threshold on r, stores the
// verdicts in r.Thresholds and reports whether all passed.
func EvaluateThresholds(r *Result, exprs []string) (bool, error) {
	r.Thresholds = nil
	all := true
	for _, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil {
			return false, err
		}
		v := t.Eval(r)
		r.Thresholds = append(r.Thresholds, v)
		all = all && v.Pass
	}
	return all, nil
}
