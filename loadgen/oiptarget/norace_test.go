//go:build !race

package oiptarget

const raceEnabled = false
