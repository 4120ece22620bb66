package loadgen

// ths parses threshold expressions for a test; it panics on a bad one.
func ths(exprs ...string) []Threshold {
	ts := []Threshold{}
	for _, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil {
			panic(err)
		}
		ts = append(ts, t)
	}
	return ts
}

// rateOf parses a rate profile for a test; it panics on a bad one.
func rateOf(s string) RateProfile {
	p, err := ParseRate(s)
	if err != nil {
		panic(err)
	}
	return p
}

// mustLevels parses a sweep range for a test; it panics on a bad one.
func mustLevels(s string) Levels {
	l, err := ParseLevels(s, false)
	if err != nil {
		panic(err)
	}
	return l
}
