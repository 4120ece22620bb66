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
