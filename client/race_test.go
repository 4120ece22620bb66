//go:build race

package client_test

// raceEnabled: the race detector allocates on its own, so memory bounds
// are skipped under it.
const raceEnabled = true
