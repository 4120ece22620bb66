//go:build race

package oiptarget

// raceEnabled: the race detector multiplies memory use, so peak-RSS tests
// are skipped under it.
const raceEnabled = true
