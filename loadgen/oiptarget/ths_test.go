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
