package main

import "github.com/oipkit/oipkit/loadgen"

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
