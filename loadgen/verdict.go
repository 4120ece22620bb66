package loadgen

import (
	"fmt"
	"strings"

	"github.com/oipkit/oipkit/verdict"
)

// Verdict is a result's status and why. The statuses are oipkit's one
// vocabulary (package verdict), ranked for a load result as the CLI's exit
// statuses rank them: a run that did not complete says nothing; an
// inconclusive one (its numbers describe the generator, or never settled)
// outranks a failed gate, whose verdict would rest on those numbers.
type Verdict struct {
	Status  verdict.Status
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
		return Verdict{verdict.NotRun, []string{why}}
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
		return Verdict{verdict.Inconclusive, inconclusive}
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
			what += " (the default bound on failed requests; Checks.MaxErrorRate changes it)"
		}
		if t.Level != "" {
			what = t.Level + ": " + what
		}
		failed = append(failed, fmt.Sprintf("%s: actual %s", what, t.ActualStr))
	}
	if len(failed) > 0 {
		return Verdict{verdict.Failed, failed}
	}
	return Verdict{Status: verdict.Pass}
}
