package main

import (
	"errors"
	"fmt"
)

// The exit statuses of every command are package verdict's
// (verdict.ExitPass, ExitUsage, ExitNotRun, ExitFailed, ExitInconclusive):
// one scheme, so a CI job reads `oipkit conform`, `load`, `report`,
// `matrix` and `serve` the same way. When several apply, the lowest
// non-zero one wins, except that an inconclusive load run (4) outranks a
// failed threshold (3): the numbers of a generator-bound run describe the
// generator, so a verdict on them means nothing.

// exitError carries a command's exit status to main; its message, if any,
// has already been printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCodeOf returns the status carried by err, or -1.
func exitCodeOf(err error) int {
	var e exitError
	if errors.As(err, &e) {
		return e.code
	}
	return -1
}
