package main

import (
	"errors"
	"fmt"
)

// The exit status of every oipkit command. One scheme, so a CI job reads
// `oipkit conform`, `load`, `report`, `matrix` and `serve` the same way.
// When several apply, the lowest non-zero one wins, except that an
// inconclusive load run (4) outranks a failed threshold (3): the numbers of
// a generator-bound run describe the generator, so a verdict on them means
// nothing.
const (
	// exitPass: the command did what was asked and every verdict passed.
	exitPass = 0
	// exitUsage: a bad flag, configuration or input file, detected before
	// anything was sent; nothing ran.
	exitUsage = 1
	// exitNotRun: the command could not run or complete: nothing listens,
	// the target is not an OIP server, it stopped answering, a route never
	// answers, the model never became ready, or the run was interrupted.
	exitNotRun = 2
	// exitFailed: it ran and a verdict failed: a blocking conformance
	// requirement, a --threshold, or the default bound on failed requests.
	exitFailed = 3
	// exitInconclusive: it ran but the result cannot be trusted as a
	// verdict: a partial conformance run (specs skipped), a generator-bound
	// load run, or a merged result missing segments.
	exitInconclusive = 4
)

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
