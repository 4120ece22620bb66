package conformance

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/verdict"
)

func sampleReport() *report.ConformanceReport {
	ev := &report.Evidence{Request: report.Message{Method: "POST", Target: "/v2/models/add_sub/infer"}, Response: report.Message{Status: "HTTP 200", Body: "{\x01}"}}
	rs := []report.RequirementResult{
		{ID: "OIP-REST-INFER-006", Level: "MUST", Binds: "server", Statement: "the id is echoed", Status: report.StatusFailed,
			Findings: []report.Finding{{Spec: "echoes a plain id", Class: report.ClassFail, Message: `id is "", want "42"`, Evidence: ev}}},
		{ID: "OIP-REST-INFER-010", Level: "MUST", Binds: "client", Statement: "dimensions are integers", Status: report.StatusLenient,
			Findings: []report.Finding{{Spec: "rejects a string shape dimension", Class: report.ClassLenient, Message: "got 200 & <ok>", Evidence: ev}}},
		{ID: "OIP-REST-ERR-003", Level: "SHOULD", Statement: "400", Status: report.StatusWarning,
			Findings: []report.Finding{{Spec: "s", Class: report.ClassWarning, Message: "got 422, want 400"}}},
		{ID: "OIP-GRPC-INFER-001", Level: "MUST", Statement: "infer", Status: report.StatusNotRun, Reason: "route does not answer: gRPC /inference.GRPCInferenceService/ModelInfer"},
		{ID: "OIP-REST-HEALTH-001", Level: "MUST", Statement: "live", Status: report.StatusPassed},
		{ID: "OIP-EXT-STAT-001", Level: "MUST", Statement: "stats", Status: report.StatusNotSupported},
		{ID: "OIP-GEN-006", Level: "SHOULD", Statement: "docs", Status: report.StatusNotCovered},
	}
	return &report.ConformanceReport{APIVersion: report.APIVersion, Kind: report.Kind,
		Implementation: report.Implementation{Name: "srv", Version: "1"}, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Requirements: rs, Counts: report.Count(rs), Profiles: []report.ProfileResult{{Name: "OIP-REST-CORE", Verdict: verdict.Failed, Summary: "s"}}}
}

type parsedJUnit struct {
	Tests, Failures, Skipped int `xml:",attr"`
	Suites                   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, strict bool) (parsedJUnit, string) {
	t.Helper()
	r := sampleReport()
	r.Strict = strict
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		parsedJUnit
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b.String())
	}
	doc.parsedJUnit.Tests, doc.parsedJUnit.Failures, doc.parsedJUnit.Skipped = doc.Tests, doc.Failures, doc.Skipped
	return doc.parsedJUnit, b.String()
}

// One test case per graded requirement, named by ID and statement; fails
// are failures, not-run is skipped, lenient and warning pass with their
// findings visible (failures under --strict).
func TestJUnit(t *testing.T) {
	doc, text := parseJUnit(t, false)
	if doc.Tests != 5 || doc.Failures != 1 || doc.Skipped != 1 {
		t.Errorf("tests=%d failures=%d skipped=%d, want 5, 1, 1 (not-supported and not-covered are left out)\n%s", doc.Tests, doc.Failures, doc.Skipped, text)
	}
	cases := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases++
			id, statement, _ := strings.Cut(c.Name, ": ")
			if statement == "" || c.Classname != s.Name || !strings.HasPrefix(id, s.Name+"-") {
				t.Errorf("case %q in suite %s (classname %s): want \"ID: statement\" in its group's suite", c.Name, s.Name, c.Classname)
			}
			switch id {
			case "OIP-REST-INFER-006":
				if c.Failure == nil || c.Failure.Type != "fail" || !strings.Contains(c.Failure.Text, "sent: POST /v2/models/add_sub/infer") {
					t.Errorf("failed requirement: %+v", c.Failure)
				}
			case "OIP-REST-INFER-010":
				if c.Failure != nil || !strings.Contains(c.SystemOut, "LENIENT: got 200 & <ok>") {
					t.Errorf("lenient requirement: failure %+v, output %q", c.Failure, c.SystemOut)
				}
			case "OIP-GRPC-INFER-001":
				if c.Skipped == nil || !strings.Contains(c.Skipped.Message, "not-run: route does not answer") {
					t.Errorf("not-run requirement: %+v", c.Skipped)
				}
			}
		}
	}
	if cases != doc.Tests {
		t.Errorf("%d cases, tests=%d", cases, doc.Tests)
	}
	if strings.Contains(text, ".go:") || strings.Contains(text, "/conformance/") {
		t.Errorf("JUnit names files of the build tree:\n%s", text)
	}
	strict, _ := parseJUnit(t, true)
	if strict.Failures != 3 {
		t.Errorf("--strict: %d failures, want 3 (fail, lenient, warning)", strict.Failures)
	}
}

func TestStepSummary(t *testing.T) {
	var b bytes.Buffer
	if err := WriteStepSummary(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"## OIP conformance: srv 1 — FAILED", "| OIP-REST-CORE | **failed** |", "<details open><summary>1 failed</summary>",
		"- **OIP-REST-INFER-006** (MUST): the id is echoed — id is \"\", want \"42\"", "<summary>1 lenient</summary>", "1 not-run"} {
		if !strings.Contains(out, want) {
			t.Errorf("step summary lacks %q:\n%s", want, out)
		}
	}
}
