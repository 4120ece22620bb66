package loadgen

import (
	"testing"
	"time"
)

func TestParseThreshold(t *testing.T) {
	for _, s := range []string{"p99<20ms", "p50<=5ms", "p99.9 < 1s", "error_rate<0.1%", "error_rate<=0.001", "rps>1000",
		"send_lag_p99<1ms", "service_p99<2ms", "response_max<1s", "mean<10ms", "offered_rps>=990", "dropped<=0", "timeouts==0", "errors<5"} {
		if _, err := ParseThreshold(s); err != nil {
			t.Errorf("ParseThreshold(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "p99", "p99<", "p99<fast", "p101<1s", "q99<1ms", "rps>lots", "error_rate<x%",
		"service_rps>1", "<1ms", "latency<1ms"} {
		if _, err := ParseThreshold(s); err == nil {
			t.Errorf("ParseThreshold(%q) succeeded, want an error", s)
		}
	}
}

func TestThresholdEval(t *testing.T) {
	r := NewResult(Config{})
	for i := int64(1); i <= 100; i++ {
		r.Histograms.Response.Record(i * int64(time.Millisecond))
		r.Histograms.Service.Record(i * int64(time.Microsecond))
	}
	r.Counts = Counts{Completed: 1000, OK: 998, Errors: 1, Timeouts: 1}
	r.Rates.Completed = 1500
	cases := []struct {
		expr string
		pass bool
	}{
		{"p50<=50.1ms", true}, {"p50<49.9ms", false}, {"p99<20ms", false}, {"max<=100.1ms", true},
		{"service_p99<100us", true}, {"service_p99<50us", false},
		{"error_rate<0.3%", true}, {"error_rate<0.2%", false}, {"error_rate<=0.002", true},
		{"rps>1000", true}, {"rps>2000", false}, {"timeouts==1", true}, {"dropped<=0", true},
	}
	for _, c := range cases {
		th, err := ParseThreshold(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Eval(r); got.Pass != c.pass {
			t.Errorf("%s on the test result: pass %v (actual %s), want %v", c.expr, got.Pass, got.ActualStr, c.pass)
		}
	}
	ok, err := EvaluateThresholds(r, ths("p50<=50.1ms", "rps>2000")), error(nil)
	// The default bound on failed requests (1%) comes third and passes at 0.2%.
	if err != nil || ok || len(r.Thresholds) != 3 || !r.Thresholds[0].Pass || r.Thresholds[1].Pass ||
		!r.Thresholds[2].Default || !r.Thresholds[2].Pass {
		t.Errorf("EvaluateThresholds = %v, %v, %+v", ok, err, r.Thresholds)
	}
}
