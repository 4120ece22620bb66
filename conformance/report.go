package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/verdict"
	"github.com/oipkit/oipkit/version"
)

// catalog is the requirement catalog the report lists.
var catalog = engine.Catalog

// reqState accumulates what the specs said about one requirement.
type reqState struct {
	specs    []string
	passed   bool
	skipped  []string // reasons
	notRun   []string // reasons
	notSupp  []string // reasons
	findings []report.Finding
	notes    []string
	classes  map[report.Class]bool
}

// reqStates holds each requirement's state by ID.
type reqStates map[string]*reqState

// get returns id's state, creating it on first use.
func (m reqStates) get(id string) *reqState {
	s, ok := m[id]
	if !ok {
		s = &reqState{classes: map[report.Class]bool{}}
		m[id] = s
	}
	return s
}

// buildReport turns ginkgo's report into the conformance report.
func buildReport(r types.Report, t *engine.Target, opts Options, start time.Time) *report.ConformanceReport {
	states := reqStates{}
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
		states.addSpec(sr, t, opts, ended)
	}

	rep := newReport(t, opts, start)
	waivers, _ := Waivers()
	for _, q := range catalog().Requirements {
		rep.Requirements = append(rep.Requirements, requirementResult(q, states[q.ID], t, waivers))
	}
	report.Block(rep.Requirements, causeRank)
	rep.Counts = report.Count(rep.Requirements)
	rep.Incomplete, rep.Problem = runProblems(r, t, problems)
	rep.Profiles = profileResults(rep, t, opts)
	return rep
}

// addSpec records what one spec (an It) said about each requirement it
// is labelled with: its findings and notes, then its outcome. ended: the
// run stopped early, so a spec skipped without a reason was not run.
func (m reqStates) addSpec(sr types.SpecReport, t *engine.Target, opts Options, ended bool) {
	labels := sr.Labels()
	ids := engine.LabelValues(labels, engine.LabelKeyReq)
	text := sr.FullText()
	for _, id := range ids {
		m.get(id).specs = append(m.get(id).specs, text)
	}
	attributed := m.addEntries(sr, ids, text)
	switch {
	case sr.State == types.SpecStatePassed:
		for _, id := range ids {
			m.get(id).passed = true
		}
	case sr.State == types.SpecStateSkipped || sr.State == types.SpecStatePending:
		reason, kind := skipReason(sr, labels, t, opts)
		if ended && sr.Failure.Message == "" && kind == skipped {
			reason, kind = "the run ended early", notRun
		}
		for _, id := range ids {
			s := m.get(id)
			switch kind {
			case skipped:
				s.skipped = append(s.skipped, reason)
			case notRun:
				s.notRun = append(s.notRun, reason)
			default:
				s.notSupp = append(s.notSupp, reason)
			}
		}
	default: // failed, panicked, timed out, aborted, interrupted
		if len(attributed) == 0 {
			// No finding says which requirement broke: the spec's
			// failure is every requirement's.
			msg := sr.Failure.Message
			if sr.State != types.SpecStateFailed {
				msg = fmt.Sprintf("%s: %s", sr.State, msg)
			}
			for _, id := range ids {
				s := m.get(id)
				s.classes[report.ClassFail] = true
				s.findings = append(s.findings, report.Finding{Spec: text, Class: report.ClassFail, Message: msg})
			}
		}
		for _, id := range ids {
			if !attributed[id] && len(attributed) > 0 {
				m.get(id).passed = true
			}
		}
	}
}

// addEntries records a spec's findings and notes under the requirement
// each names (all of the spec's when it names none) and returns the
// requirements a finding was recorded for.
func (m reqStates) addEntries(sr types.SpecReport, ids []string, text string) map[string]bool {
	attributed := map[string]bool{}
	for _, e := range sr.ReportEntries {
		v, ok := e.GetRawValue().(engine.EntryValue)
		if !ok {
			continue
		}
		targets := []string{v.Req}
		if v.Req == "" {
			targets = ids
		}
		for _, id := range targets {
			s := m.get(id)
			switch e.Name {
			case engine.EntryNote:
				s.notes = append(s.notes, v.Message)
			case engine.EntryFinding:
				attributed[id] = true
				s.classes[v.Class] = true
				s.findings = append(s.findings, report.Finding{Spec: text, Class: v.Class, Message: v.Message, Ambiguity: v.Ambiguity, Evidence: v.Evidence, Scope: v.Scope, Reproducer: v.Reproducer})
			}
		}
	}
	return attributed
}

// newReport is the report's header: what was tested, by which suite, when.
func newReport(t *engine.Target, opts Options, start time.Time) *report.ConformanceReport {
	rep := &report.ConformanceReport{
		APIVersion:        report.APIVersion,
		Kind:              report.Kind,
		Implementation:    report.Implementation{Name: t.ImplName, Version: t.ImplVersion},
		SuiteVersion:      version.SuiteVersion,
		OIPKitVersion:     version.Version,
		Date:              start.UTC().Truncate(time.Second),
		Duration:          time.Since(start).Round(10 * time.Millisecond).String(),
		Targets:           report.Targets{HTTP: opts.HTTPURL, GRPC: opts.GRPCAddr},
		FeatureSource:     t.FeatureSource,
		Extensions:        t.Extensions,
		UnknownExtensions: t.UnknownExtensions,
		Strict:            opts.Strict,
		Fixtures:          t.Fixtures(),
		Features:          []string{},
	}
	for _, f := range t.FeatureList() {
		rep.Features = append(rep.Features, string(f))
	}
	return rep
}

// runProblems says whether the run is incomplete (the suite failed as a
// whole, a spec was aborted or interrupted, a route did not answer) and
// every problem of the run, setup failures given first.
func runProblems(r types.Report, t *engine.Target, problems []string) (incomplete bool, problem string) {
	if len(r.SpecialSuiteFailureReasons) > 0 {
		incomplete = true
		problems = append(problems, r.SpecialSuiteFailureReasons...)
	}
	aborted := false
	for _, sr := range r.SpecReports {
		if sr.State == types.SpecStateAborted || sr.State == types.SpecStateInterrupted {
			aborted = true
			problems = append(problems, sr.Failure.Message)
		}
	}
	// A server that dies on the run's last spec (the suite runs the
	// requests some servers do not survive last) leaves nothing not run:
	// that is a failure of that spec, not an incomplete run.
	incomplete = incomplete || aborted && notRunAfterAbort(r) > 0
	if routes := t.RouteProblems(); len(routes) > 0 {
		incomplete = true
		problems = append(problems, routes...)
	}
	problems = append(problems, t.Problems...)
	return incomplete, strings.Join(slices.Compact(problems), "; ")
}

// notRunAfterAbort counts the specs (Its) an abort left unrun: skipped
// without a skip of their own.
func notRunAfterAbort(r types.Report) int {
	n := 0
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType == types.NodeTypeIt && sr.State == types.SpecStateSkipped && sr.Failure.Message == "" {
			n++
		}
	}
	return n
}

// causeRules are the requirements about an answer as a whole, which a
// failed answer is graded under first when several requirements fail on
// it (report.Block): a 5xx for a malformed request breaks
// OIP-REST-ERR-003, a failed answer to a request without an id breaks
// OIP-REST-INFER-006 (the id is optional), and a failed answer to a valid
// inference breaks OIP-REST-INFER-001 or OIP-GRPC-INFER-001, whatever rule
// about its content the spec meant to check.
var causeRules = []string{"OIP-REST-ERR-003", "OIP-REST-INFER-006", "OIP-REST-INFER-001", "OIP-GRPC-INFER-001"}

// causeRank orders the requirements a failed answer's cause is chosen
// from: the cause rules, then the catalog's order.
func causeRank(id string) int {
	if i := slices.Index(causeRules, id); i >= 0 {
		return i
	}
	for i, q := range catalog().Requirements {
		if q.ID == id {
			return len(causeRules) + i
		}
	}
	return len(causeRules) + len(catalog().Requirements)
}

// skipKind is what a skip means for its requirements.
type skipKind int

const (
	skipped      skipKind = iota // applicable, not checked: inconclusive
	notRun                       // not run: incomplete
	notSupported                 // does not apply
)

// skipReason explains a skipped spec, and what the skip means.
func skipReason(sr types.SpecReport, labels []string, t *engine.Target, opts Options) (string, skipKind) {
	msg := sr.Failure.Message
	switch {
	case strings.HasPrefix(msg, engine.SkipNotRun):
		return strings.TrimPrefix(msg, engine.SkipNotRun), notRun
	case strings.HasPrefix(msg, engine.SkipOptionalFixture), strings.HasPrefix(msg, engine.SkipNotApplicable):
		return msg, notSupported
	case msg != "":
		return msg, skipped
	}
	for _, tr := range engine.LabelValues(labels, engine.LabelKeyTransport) {
		if !slices.Contains(opts.transports(), Transport(tr)) {
			return "transport " + tr + " not targeted", notSupported
		}
	}
	var missing []string
	for _, f := range engine.LabelValues(labels, engine.LabelKeyFeature) {
		if !t.Features[Feature(f)] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("feature not supported (%s): %s", featureWhy(t), strings.Join(missing, ", ")), notSupported
	}
	// Excluded by the user's own label filter: the requirement applies but
	// was not checked, so the verdict cannot be a pass.
	return "not selected by the label filter", skipped
}

// featureWhy says why a feature is off: the flag did not name it, or the
// server neither advertised it nor served it to the probe.
func featureWhy(t *engine.Target) string {
	if t.FeatureSource == "flag" {
		return "not named by --features"
	}
	return "neither advertised nor observed"
}

func requirementResult(q specs.Requirement, s *reqState, t *engine.Target, waivers map[string]Waiver) report.RequirementResult {
	res := report.RequirementResult{
		ID: q.ID, Level: string(q.Level), Blocking: q.Level.Blocking(),
		Transport: string(q.Transport), Extension: string(q.Extension),
		Statement: q.Statement, Binds: string(q.Binds), Class: report.Class(q.Class),
	}
	if s == nil || len(s.specs) == 0 {
		switch {
		case q.Extension != "" && !t.Features[q.Extension]:
			res.Status, res.Reason = report.StatusNotSupported, fmt.Sprintf("extension %s not supported (%s)", q.Extension, featureWhy(t))
		case waivers[q.ID].Reason != "":
			res.Status, res.Reason = report.StatusNotCovered, "waived: "+waivers[q.ID].Reason
		default:
			res.Status, res.Reason = report.StatusNotCovered, "no spec checks this requirement yet"
		}
		return res
	}
	res.Specs, res.Findings, res.Notes = s.specs, s.findings, slices.Compact(s.notes)
	if note := inconclusiveNote(q, t); note != "" {
		res.Notes = append(res.Notes, note)
	}
	sort.Strings(res.Specs)
	// A fail decides; then what was not checked (not run, skipped) outranks
	// lenient and warning findings, which never decide a verdict alone: a
	// requirement that was only partly checked cannot let its profile pass.
	switch {
	case s.classes[report.ClassFail]:
		res.Status = report.StatusFailed
	case len(s.notRun) > 0:
		res.Status, res.Reason = report.StatusNotRun, strings.Join(slices.Compact(sorted(s.notRun)), "; ")
	case len(s.skipped) > 0:
		res.Status, res.Reason = report.StatusSkipped, strings.Join(slices.Compact(sorted(s.skipped)), "; ")
	case s.classes[report.ClassLenient]:
		res.Status = report.StatusLenient
	case s.classes[report.ClassWarning]:
		res.Status = report.StatusWarning
	case s.passed:
		res.Status = report.StatusPassed
	default:
		res.Status, res.Reason = report.StatusNotSupported, strings.Join(slices.Compact(sorted(s.notSupp)), "; ")
	}
	return res
}

// inconclusiveNote says, on a requirement of an extension that was
// neither advertised nor observed, that its specs ran because the
// extension's probe could not tell.
func inconclusiveNote(q specs.Requirement, t *engine.Target) string {
	if q.Extension == "" || t.FeatureSource != "discovered" {
		return ""
	}
	for _, e := range t.Extensions {
		if e.Name == string(q.Extension) && !e.Advertised && e.Probe == report.ProbeInconclusive {
			return fmt.Sprintf("extension %s is not advertised and its probe was inconclusive (%s): its specs ran to find out", e.Name, e.Detail)
		}
	}
	return ""
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// profileResults computes the verdict of every selected profile: failed when
// a requirement failed (or, under --strict, was lenient or warned); inconclusive
// when nothing failed but the run is incomplete or requirements were
// skipped or not run; pass otherwise.
func profileResults(rep *report.ConformanceReport, t *engine.Target, opts Options) []report.ProfileResult {
	profiles, err := Profiles()
	if err != nil {
		return nil
	}
	var out []report.ProfileResult
	for _, p := range profiles {
		if len(opts.Profiles) > 0 && !slices.Contains(opts.Profiles, p.Name) {
			continue
		}
		pr := report.ProfileResult{Name: p.Name, Counts: map[report.Status]int{}}
		var missing []string
		for _, f := range p.Features {
			if !t.Features[f] {
				missing = append(missing, string(f))
			}
		}
		switch {
		case !slices.Contains(opts.transports(), p.Transport):
			pr.Verdict, pr.Summary = verdict.NotSupported, "transport "+string(p.Transport)+" not targeted"
			out = append(out, pr)
			continue
		case len(missing) > 0:
			pr.Verdict, pr.Summary = verdict.NotSupported, "feature not supported: "+strings.Join(missing, ", ")
			out = append(out, pr)
			continue
		}
		var included []report.RequirementResult
		for _, q := range rep.Requirements {
			if r, ok := catalog().Get(q.ID); ok && p.Includes(r) {
				included = append(included, q)
			}
		}
		pr.Counts = report.Count(included)
		for _, q := range included {
			switch q.Status {
			case report.StatusFailed:
				pr.Failed = append(pr.Failed, q.ID)
			case report.StatusLenient:
				pr.Lenient = append(pr.Lenient, q.ID)
			case report.StatusWarning:
				pr.Warnings = append(pr.Warnings, q.ID)
			case report.StatusSkipped:
				pr.Skipped = append(pr.Skipped, q.ID)
			case report.StatusNotRun:
				pr.NotRun = append(pr.NotRun, q.ID)
			case report.StatusBlocked:
				pr.Blocked = append(pr.Blocked, q.ID)
			}
		}
		switch {
		case len(pr.Failed) > 0, opts.Strict && len(pr.Lenient)+len(pr.Warnings) > 0:
			pr.Verdict = verdict.Failed
		// A run that ended early marks every spec it did not reach not
		// run, so a profile all of whose requirements were checked keeps
		// its verdict: a server that dies on its last specs is not
		// inconclusive everywhere (the run's own verdict stays not-run).
		case len(pr.Skipped) > 0, len(pr.NotRun) > 0, len(pr.Blocked) > 0:
			pr.Verdict = verdict.Inconclusive
		default:
			pr.Verdict = verdict.Pass
		}
		pr.Summary = fmt.Sprintf("%d requirements: %d passed, %d failed, %d blocked, %d lenient, %d warnings, %d skipped, %d not run, %d not covered",
			len(included), pr.Counts[report.StatusPassed], len(pr.Failed), len(pr.Blocked), len(pr.Lenient), len(pr.Warnings),
			len(pr.Skipped), len(pr.NotRun), pr.Counts[report.StatusNotCovered])
		out = append(out, pr)
	}
	return out
}
