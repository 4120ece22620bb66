// Package loadgentest helps tests that configure the load generator, as
// net/http/httptest helps tests of HTTP code: it parses the thresholds,
// rate profiles and sweep ranges a test writes as literals, and panics on
// a bad one (a literal in a test is a bug, not input).
package loadgentest

import "github.com/oipkit/oipkit/loadgen"

// Thresholds parses threshold expressions such as "p99<20ms".
func Thresholds(exprs ...string) []loadgen.Threshold {
	ts := []loadgen.Threshold{}
	for _, e := range exprs {
		t, err := loadgen.ParseThreshold(e)
		if err != nil {
			panic(err)
		}
		ts = append(ts, t)
	}
	return ts
}

// Rate parses a rate profile such as "100" or "step:…".
func Rate(s string) loadgen.RateProfile {
	p, err := loadgen.ParseRate(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Levels parses a sweep range "START:END[:STEP]" of rates.
func Levels(s string) loadgen.Levels {
	l, err := loadgen.ParseLevels(s, false)
	if err != nil {
		panic(err)
	}
	return l
}
