package conformance

import (
	"testing"

	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/verdict"
)

// A requirement that warned in one spec and was skipped in another was only
// partly checked: it must be skipped (its profile partial), not warning
// (its profile passing).
func TestSkipOutranksWarning(t *testing.T) {
	q, ok := catalog().Get("OIP-REST-DATA-007")
	if !ok {
		t.Fatal("OIP-REST-DATA-007 missing from the catalog")
	}
	tg := &engine.Target{Features: map[Feature]bool{}}
	s := &reqState{specs: []string{"a", "b"}, passed: true, skipped: []string{engine.SkipFixture + "identity_int8"},
		classes:  map[report.Class]bool{report.ClassWarning: true},
		findings: []report.Finding{{Class: report.ClassWarning, Message: "m"}}}
	res := requirementResult(q, s, tg, nil)
	if res.Status != report.StatusSkipped || len(res.Findings) != 1 {
		t.Errorf("status %s with %d findings, want skipped keeping the warning", res.Status, len(res.Findings))
	}
	// Not run outranks skipped: the run is incomplete.
	s.notRun = []string{"route does not answer: REST POST /v2/models/{m}/infer"}
	if res := requirementResult(q, s, tg, nil); res.Status != report.StatusNotRun {
		t.Errorf("status %s, want not-run", res.Status)
	}
}

// A lenient finding makes the requirement lenient, not failed; a fail
// finding in another spec outranks it.
func TestLenientStatus(t *testing.T) {
	q, _ := catalog().Get("OIP-REST-INFER-010")
	tg := &engine.Target{Features: map[Feature]bool{}}
	s := &reqState{specs: []string{"a"}, passed: true, classes: map[report.Class]bool{report.ClassLenient: true}}
	if res := requirementResult(q, s, tg, nil); res.Status != report.StatusLenient || res.Binds != "client" || res.Statement == "" {
		t.Errorf("got %s (binds %q, statement %q), want lenient with the catalog's binds and statement", res.Status, res.Binds, res.Statement)
	}
	s.classes[report.ClassFail] = true
	if res := requirementResult(q, s, tg, nil); res.Status != report.StatusFailed {
		t.Errorf("got %s, want failed", res.Status)
	}
}

// A failed requirement fails its profile whatever its level; lenient and
// warning ones fail it only under --strict.
func TestProfileVerdicts(t *testing.T) {
	tg := &engine.Target{Features: map[Feature]bool{}}
	build := func(status map[string]report.Status) *report.ConformanceReport {
		rep := &report.ConformanceReport{}
		for _, q := range catalog().Requirements {
			st, ok := status[q.ID]
			if !ok {
				st = report.StatusPassed
			}
			rep.Requirements = append(rep.Requirements, report.RequirementResult{ID: q.ID, Blocking: q.Level.Blocking(), Status: st})
		}
		return rep
	}
	profileOf := func(rep *report.ConformanceReport, strict bool) report.ProfileResult {
		for _, p := range profileResults(rep, tg, Options{HTTPURL: "http://x", Strict: strict}) {
			if p.Name == "OIP-REST-CORE" {
				return p
			}
		}
		t.Fatal("no OIP-REST-CORE profile")
		return report.ProfileResult{}
	}
	failed := build(map[string]report.Status{"OIP-REST-ERR-003": report.StatusFailed}) // SHOULD; failed by a 5xx (hard)
	if p := profileOf(failed, false); p.Verdict != verdict.Failed || len(p.Failed) != 1 {
		t.Errorf("OIP-REST-CORE: %s, failed %v; want fail on OIP-REST-ERR-003", p.Verdict, p.Failed)
	}
	lenient := build(map[string]report.Status{"OIP-REST-INFER-010": report.StatusLenient})
	if p := profileOf(lenient, false); p.Verdict != verdict.Pass || len(p.Lenient) != 1 {
		t.Errorf("lenient: %s (lenient %v), want pass listing it", p.Verdict, p.Lenient)
	}
	if p := profileOf(lenient, true); p.Verdict != verdict.Failed {
		t.Errorf("lenient under --strict: %s, want fail", p.Verdict)
	}
	notRun := build(map[string]report.Status{"OIP-REST-INFER-001": report.StatusNotRun})
	if p := profileOf(notRun, false); p.Verdict != verdict.Inconclusive || len(p.NotRun) != 1 {
		t.Errorf("not run: %s, want partial", p.Verdict)
	}
}
