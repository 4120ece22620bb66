package oiptarget

import "github.com/oipkit/oipkit/loadgen"

// ths parses threshold expressions for a test; it panics on a bad one.
func ths(exprs ...string) []loadgen.Threshold {
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

// mustRate parses a rate profile for a test; it panics on a bad one.
func mustRate(s string) loadgen.RateProfile {
	p, err := loadgen.ParseRate(s)
	if err != nil {
		panic(err)
	}
	return p
}

// mustLevels parses a sweep range for a test; it panics on a bad one.
func mustLevels(s string) loadgen.Levels {
	l, err := loadgen.ParseLevels(s, false)
	if err != nil {
		panic(err)
	}
	return l
}
