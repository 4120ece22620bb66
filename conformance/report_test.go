package conformance

import (
	"testing"

	"github.com/oipkit/oipkit/reports"
)

// A requirement that warned in one spec and was skipped in another was only
// partly checked: it must be skipped (its profile partial), not warning
// (its profile passing).
func TestSkipOutranksWarning(t *testing.T) {
	q, ok := catalog.Get("OIP-REST-DATA-007")
	if !ok {
		t.Fatal("OIP-REST-DATA-007 missing from the catalog")
	}
	tg := &target{opts: Options{HTTPURL: "http://x"}, features: map[Feature]bool{}}
	s := &reqState{specs: []string{"a", "b"}, passed: true, hasWarning: true, skipped: []string{skipFixture + "identity_int8"},
		findings: []reports.Finding{{Grade: reports.GradeWarning, Message: "m"}}}
	res := requirementResult(q, s, tg, nil)
	if res.Status != reports.StatusSkipped || len(res.Findings) != 1 {
		t.Errorf("status %s with %d findings, want skipped keeping the warning", res.Status, len(res.Findings))
	}
}

// A failed requirement fails its profile whatever its level: only blocking
// findings make a requirement failed (see grade).
func TestFailedNonBlockingFailsProfile(t *testing.T) {
	tg := &target{opts: Options{HTTPURL: "http://x"}, features: map[Feature]bool{}}
	rep := &reports.ConformanceReport{}
	for _, q := range catalog.Requirements {
		st := reports.StatusPassed
		if q.ID == "OIP-REST-ERR-003" { // SHOULD; failed by a 5xx (hard)
			st = reports.StatusFailed
		}
		rep.Requirements = append(rep.Requirements, reports.RequirementResult{ID: q.ID, Blocking: q.Level.Blocking(), Status: st})
	}
	for _, p := range profileResults(rep, tg) {
		if p.Name == "OIP-REST-CORE" && (p.Verdict != reports.VerdictFail || len(p.Failed) != 1) {
			t.Errorf("OIP-REST-CORE: %s, failed %v; want fail on OIP-REST-ERR-003", p.Verdict, p.Failed)
		}
	}
}
