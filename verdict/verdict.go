// Package verdict is oipkit's one vocabulary of outcomes: the words every
// command writes its verdict in, and the exit status each word maps to.
// `oipkit conform`, `load`, `report` and `matrix` use it, so a CI job reads
// all of them the same way and a word means one thing in every output.
//
// The words follow the load-testing tools (k6, perf_analyzer) and the
// Gateway API conformance suite: a run passed, failed a gate, was
// inconclusive (it ran, but what it measured cannot carry a verdict: specs
// were skipped, the generator was the bottleneck, the estimates never
// settled), or did not run to the end. A conformance profile whose
// transport was not targeted is not supported, which is not a failure.
//
// How several statuses combine is the command's rule, not the word's: a
// conformance run fails when any profile failed, even if another was
// inconclusive, while a load run whose numbers are inconclusive is
// inconclusive even if a threshold failed on those numbers.
package verdict

import "fmt"

// Status is a verdict word.
type Status string

// The statuses.
const (
	Pass         Status = "pass"
	Failed       Status = "failed"
	Inconclusive Status = "inconclusive"
	NotRun       Status = "not-run"
	NotSupported Status = "not-supported"
)

// The exit statuses of every oipkit command. When a command has several
// verdicts it combines them by its own rule (see the package comment).
const (
	// ExitPass: the command did what was asked and every verdict passed.
	ExitPass = 0
	// ExitUsage: a bad flag, configuration or input file, detected before
	// anything was sent; nothing ran.
	ExitUsage = 1
	// ExitNotRun: the command could not run or complete: nothing listens,
	// the target is not an OIP server, it stopped answering, the model
	// never became ready, or the run was interrupted.
	ExitNotRun = 2
	// ExitFailed: it ran and a verdict failed: a blocking conformance
	// requirement, a threshold, or the default bound on failed requests.
	ExitFailed = 3
	// ExitInconclusive: it ran but the result cannot be trusted as a
	// verdict: a partial conformance run (specs skipped), a generator-bound
	// or unstable load run, or a merged result missing segments.
	ExitInconclusive = 4
)

// ExitCode is the exit status a command whose only verdict is s ends with.
func (s Status) ExitCode() int {
	switch s {
	case Failed:
		return ExitFailed
	case Inconclusive:
		return ExitInconclusive
	case NotRun:
		return ExitNotRun
	}
	return ExitPass
}

// legacy maps the words older reports were written in to today's, so
// committed results keep reading.
var legacy = map[string]Status{"fail": Failed, "partial": Inconclusive, "incomplete": NotRun}

// UnmarshalText reads a status, accepting the words of older reports.
func (s *Status) UnmarshalText(b []byte) error {
	w := string(b)
	switch st := Status(w); st {
	case Pass, Failed, Inconclusive, NotRun, NotSupported:
		*s = st
		return nil
	}
	if st, ok := legacy[w]; ok {
		*s = st
		return nil
	}
	return fmt.Errorf("verdict: unknown status %q", w)
}
