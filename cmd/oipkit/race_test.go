//go:build race

package main

// raceEnabled: the race detector multiplies memory use, so peak-RSS tests
// are skipped under it.
const raceEnabled = true
