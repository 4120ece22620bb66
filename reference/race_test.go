//go:build race

package reference

// raceEnabled: the race detector allocates on its own, so allocation-count
// guards are skipped under it.
const raceEnabled = true
