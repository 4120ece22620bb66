package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/reports"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/version"
)

// Skip-message prefixes that mean "does not apply" rather than "could not be
// checked"; they never make a verdict partial.
const skipNotApplicable = "not applicable: "

// reqState accumulates what the specs said about one requirement.
type reqState struct {
	specs      []string
	passed     bool
	skipped    []string // reasons
	notSupp    []string // reasons
	findings   []reports.Finding
	notes      []string
	hasFailure bool
	hasWarning bool
}

// buildReport turns ginkgo's report into the conformance report.
func buildReport(r types.Report, t *target, start time.Time) *reports.ConformanceReport {
	states := map[string]*reqState{}
	state := func(id string) *reqState {
		s, ok := states[id]
		if !ok {
			s = &reqState{}
			states[id] = s
		}
		return s
	}
	var problems []string
	ended := len(r.SpecialSuiteFailureReasons) > 0
	for _, sr := range r.SpecReports {
		ended = ended || sr.State == types.SpecStateAborted || sr.State == types.SpecStateInterrupted
	}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			if sr.State.Is(types.SpecStateFailureStates) {
				problems = append(problems, fmt.Sprintf("%s failed: %s", sr.LeafNodeType, sr.Failure.Message))
			}
			continue
		}
		labels := sr.Labels()
		ids := labelValues(labels, labelKeyReq)
		text := sr.FullText()
		for _, id := range ids {
			state(id).specs = append(state(id).specs, text)
		}
		attributed := map[string]bool{}
		for _, e := range sr.ReportEntries {
			v, ok := e.GetRawValue().(entry)
			if !ok {
				continue
			}
			targets := []string{v.Req}
			if v.Req == "" {
				targets = ids
			}
			for _, id := range targets {
				s := state(id)
				switch e.Name {
				case entryNote:
					s.notes = append(s.notes, v.Message)
				case entryWarning:
					s.hasWarning = true
					s.findings = append(s.findings, reports.Finding{Spec: text, Grade: reports.GradeWarning, Message: v.Message, Ambiguity: v.Ambiguity, Evidence: v.Evidence})
				case entryFailure:
					s.hasFailure = true
					attributed[id] = true
					s.findings = append(s.findings, reports.Finding{Spec: text, Grade: reports.GradeFailure, Message: v.Message, Ambiguity: v.Ambiguity, Evidence: v.Evidence})
				}
			}
		}
		switch {
		case sr.State == types.SpecStatePassed:
			for _, id := range ids {
				state(id).passed = true
			}
		case sr.State == types.SpecStateSkipped || sr.State == types.SpecStatePending:
			reason, supported := skipReason(sr, labels, t)
			if ended && sr.Failure.Message == "" && supported {
				reason = "not run: the run ended early"
			}
			for _, id := range ids {
				if supported {
					state(id).skipped = append(state(id).skipped, reason)
				} else {
					state(id).notSupp = append(state(id).notSupp, reason)
				}
			}
		default: // failed, panicked, timed out, aborted, interrupted
			if len(attributed) == 0 {
				msg := sr.Failure.Message
				if sr.State != types.SpecStateFailed {
					msg = fmt.Sprintf("%s: %s", sr.State, msg)
				}
				for _, id := range ids {
					s := state(id)
					s.hasFailure = true
					s.findings = append(s.findings, reports.Finding{Spec: text, Grade: reports.GradeFailure, Message: msg})
				}
			}
			for _, id := range ids {
				if !attributed[id] && len(attributed) > 0 {
					state(id).passed = true
				}
			}
		}
	}

	waivers, _ := Waivers()
	rep := &reports.ConformanceReport{
		APIVersion:     reports.APIVersion,
		Kind:           reports.Kind,
		Implementation: reports.Implementation{Name: t.implName, Version: t.implVersion},
		SuiteVersion:   version.SuiteVersion,
		OIPKitVersion:  version.Version,
		Date:           start.UTC().Truncate(time.Second),
		Duration:       time.Since(start).Round(10 * time.Millisecond).String(),
		Targets:        reports.Targets{HTTP: t.opts.HTTPURL, GRPC: t.opts.GRPCAddr},
		FeatureSource:  t.featureSource,
		Strict:         t.opts.Strict,
		Fixtures:       t.fixtures,
	}
	rep.Features = []string{}
	for _, f := range t.featureList() {
		rep.Features = append(rep.Features, string(f))
	}
	for _, q := range catalog.Requirements {
		rep.Requirements = append(rep.Requirements, requirementResult(q, states[q.ID], t, waivers))
	}
	rep.Counts = reports.Count(rep.Requirements)
	if len(r.SpecialSuiteFailureReasons) > 0 {
		rep.Incomplete = true
		problems = append(problems, r.SpecialSuiteFailureReasons...)
	}
	for _, sr := range r.SpecReports {
		if sr.State == types.SpecStateAborted || sr.State == types.SpecStateInterrupted {
			rep.Incomplete = true
			problems = append(problems, sr.Failure.Message)
		}
	}
	problems = append(problems, t.problems...)
	rep.Problem = strings.Join(slices.Compact(problems), "; ")
	rep.Profiles = profileResults(rep, t)
	return rep
}

// skipReason explains a skipped spec, and whether the requirement was
// applicable (a skip) or not (not supported).
func skipReason(sr types.SpecReport, labels []string, t *target) (string, bool) {
	msg := sr.Failure.Message
	switch {
	case strings.HasPrefix(msg, skipOptionalFixture), strings.HasPrefix(msg, skipNotApplicable):
		return msg, false
	case msg != "":
		return msg, true
	}
	for _, tr := range labelValues(labels, labelKeyTransport) {
		if !slices.Contains(t.opts.transports(), Transport(tr)) {
			return "transport " + tr + " not targeted", false
		}
	}
	var missing []string
	for _, f := range labelValues(labels, labelKeyFeature) {
		if !t.features[Feature(f)] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("feature not supported (%s): %s", t.featureSource, strings.Join(missing, ", ")), false
	}
	// Excluded by the user's own label filter: the requirement applies but
	// was not checked, so the verdict cannot be a pass.
	return "not selected by the label filter", true
}

func requirementResult(q specs.Requirement, s *reqState, t *target, waivers map[string]Waiver) reports.RequirementResult {
	res := reports.RequirementResult{
		ID: q.ID, Level: string(q.Level), Blocking: q.Level.Blocking(),
		Transport: string(q.Transport), Extension: string(q.Extension),
	}
	if s == nil || len(s.specs) == 0 {
		switch {
		case q.Extension != "" && !t.features[Feature(q.Extension)]:
			res.Status, res.Reason = reports.StatusNotSupported, fmt.Sprintf("extension %s not supported (%s)", q.Extension, t.featureSource)
		case waivers[q.ID].Reason != "":
			res.Status, res.Reason = reports.StatusNotCovered, "waived: "+waivers[q.ID].Reason
		default:
			res.Status, res.Reason = reports.StatusNotCovered, "no spec checks this requirement yet"
		}
		return res
	}
	res.Specs, res.Findings, res.Notes = s.specs, s.findings, slices.Compact(s.notes)
	sort.Strings(res.Specs)
	// A skip outranks a warning: a requirement that was only partly checked
	// cannot let its profile pass, and warnings never decide a verdict.
	switch {
	case s.hasFailure:
		res.Status = reports.StatusFailed
	case len(s.skipped) > 0:
		res.Status, res.Reason = reports.StatusSkipped, strings.Join(slices.Compact(sorted(s.skipped)), "; ")
	case s.hasWarning:
		res.Status = reports.StatusWarning
	case s.passed:
		res.Status = reports.StatusPassed
	default:
		res.Status, res.Reason = reports.StatusNotSupported, strings.Join(slices.Compact(sorted(s.notSupp)), "; ")
	}
	return res
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// profileResults computes the verdict of every selected profile.
func profileResults(rep *reports.ConformanceReport, t *target) []reports.ProfileResult {
	profiles, err := Profiles()
	if err != nil {
		return nil
	}
	var out []reports.ProfileResult
	for _, p := range profiles {
		if len(t.opts.Profiles) > 0 && !slices.Contains(t.opts.Profiles, p.Name) {
			continue
		}
		pr := reports.ProfileResult{Name: p.Name, Counts: map[reports.Status]int{}}
		var missing []string
		for _, f := range p.Features {
			if !t.features[f] {
				missing = append(missing, string(f))
			}
		}
		switch {
		case !slices.Contains(t.opts.transports(), p.Transport):
			pr.Verdict, pr.Summary = reports.VerdictNotSupported, "transport "+string(p.Transport)+" not targeted"
			out = append(out, pr)
			continue
		case len(missing) > 0:
			pr.Verdict, pr.Summary = reports.VerdictNotSupported, "feature not supported: "+strings.Join(missing, ", ")
			out = append(out, pr)
			continue
		}
		var included []reports.RequirementResult
		for _, q := range rep.Requirements {
			if r, ok := catalog.Get(q.ID); ok && p.Includes(r) {
				included = append(included, q)
			}
		}
		pr.Counts = reports.Count(included)
		for _, q := range included {
			// A requirement is failed only by a finding that blocks (see
			// grade): its level, --strict, a catalog FAIL, or no answer.
			switch q.Status {
			case reports.StatusFailed:
				pr.Failed = append(pr.Failed, q.ID)
			case reports.StatusSkipped:
				pr.Skipped = append(pr.Skipped, q.ID)
			case reports.StatusWarning:
				pr.Warnings = append(pr.Warnings, q.ID)
			}
		}
		switch {
		case rep.Incomplete:
			pr.Verdict = reports.VerdictPartial
		case len(pr.Failed) > 0:
			pr.Verdict = reports.VerdictFail
		case len(pr.Skipped) > 0:
			pr.Verdict = reports.VerdictPartial
		default:
			pr.Verdict = reports.VerdictPass
		}
		if len(pr.Failed) > 0 {
			pr.Verdict = reports.VerdictFail
		}
		pr.Summary = fmt.Sprintf("%d requirements: %d passed, %d failed, %d warnings, %d skipped, %d not covered",
			len(included), pr.Counts[reports.StatusPassed], len(pr.Failed), len(pr.Warnings), len(pr.Skipped), pr.Counts[reports.StatusNotCovered])
		out = append(out, pr)
	}
	return out
}
