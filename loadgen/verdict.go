package loadgen

import (
	"fmt"
	"strings"
)

// Status is the verdict on a result, in the order the CLI's exit statuses
// rank them: a run that did not complete says nothing; an inconclusive one
// (its numbers describe the generator, or never settled) outranks a failed
// gate, whose verdict would rest on those numbers.
type Status string

// The statuses.
const (
	StatusPass         Status = "pass"
	StatusFailed       Status = "failed"       // a threshold, SLO or the default failed-request bound failed
	StatusInconclusive Status = "inconclusive" // generator-bound, unstable, an SLO search bounded by the generator, or a merged result missing segments
	StatusNotRun       Status = "not-run"      // interrupted, or the run could not go on
)

// Verdict is a result's status and why.
type Verdict struct {
	Status  Status
	Reasons []string
}

// Judge returns the verdict on r, whose thresholds have been evaluated
// ([EvaluateThresholds]).
func Judge(r *Result) Verdict {
	switch r.EndReason {
	case EndCompleted, EndAborted:
	default:
		why := "the run did not complete"
		if r.Error != "" {
			why += ": " + r.Error
		}
		return Verdict{StatusNotRun, []string{why}}
	}

	var inconclusive []string
	if s := r.Segments; s != nil && !s.Complete() {
		inconclusive = append(inconclusive, s.Incomplete()...)
	}
	if r.Checks.GeneratorBound {
		inconclusive = append(inconclusive, "generator-bound: "+strings.Join(r.Checks.Reasons, "; "))
	}
	if s := r.Stability; s != nil && !s.Converged {
		inconclusive = append(inconclusive, "unstable: "+s.Reason)
	}
	for _, s := range r.Steps {
		if s.Kind == StepLevel && s.Stability != nil && !s.Stability.Converged {
			inconclusive = append(inconclusive, fmt.Sprintf("%s unstable: %s", s.Label(), s.Stability.Reason))
		}
	}
	if sr := r.Search; sr != nil && (sr.Limited || sr.Unjudged) {
		inconclusive = append(inconclusive, sr.Summary)
	}
	if len(inconclusive) > 0 {
		return Verdict{StatusInconclusive, inconclusive}
	}

	var failed []string
	if r.EndReason == EndAborted {
		failed = append(failed, r.Error)
	}
	if sr := r.Search; sr != nil && !sr.Found && !sr.Unjudged {
		failed = append(failed, sr.Summary)
	}
	for _, t := range r.Thresholds {
		if t.Pass {
			continue
		}
		what := t.Threshold
		if t.Default {
			what += " (the default bound on failed requests; --max-error-rate changes it)"
		}
		if t.Level != "" {
			what = t.Level + ": " + what
		}
		failed = append(failed, fmt.Sprintf("%s: actual %s", what, t.ActualStr))
	}
	if len(failed) > 0 {
		return Verdict{StatusFailed, failed}
	}
	return Verdict{Status: StatusPass}
}
