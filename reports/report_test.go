package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func sampleReport(name string, status Status) *ConformanceReport {
	rs := []RequirementResult{
		{ID: "OIP-REST-INFER-006", Level: "MUST", Blocking: true, Status: status,
			Findings: []Finding{{Spec: "echoes a plain id", Grade: GradeFailure, Message: "id is \"\", want \"42\"",
				Evidence: &Evidence{Request: Message{Method: "POST", Target: "/v2/models/add_sub/infer", Body: `{"id":"42"}`},
					Response: Message{Status: "HTTP 200", Body: `{"model_name":"add_sub"}`}}}}},
		{ID: "OIP-REST-ERR-003", Level: "SHOULD", Status: StatusWarning},
		{ID: "OIP-EXT-BIN-014", Level: "MAY", Status: StatusNotCovered, Reason: "waived: no fixture"},
	}
	return &ConformanceReport{
		APIVersion: APIVersion, Kind: Kind,
		Implementation: Implementation{Name: name, Version: "1.0"},
		Date:           time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC),
		Profiles:       []ProfileResult{{Name: "OIP-REST-CORE", Verdict: VerdictFail}},
		Counts:         Count(rs),
		Requirements:   rs,
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sampleReport("triton", StatusFailed)
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Implementation != r.Implementation || len(got.Requirements) != 3 ||
		got.Requirements[0].Findings[0].Evidence.Request.Target != "/v2/models/add_sub/infer" {
		t.Errorf("round trip lost data: %+v", got)
	}
	if _, err := Read(strings.NewReader(`{"apiVersion":"v0","kind":"ConformanceReport"}`)); err == nil {
		t.Error("Read accepted a report with the wrong apiVersion")
	}
}

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		verdicts   []Verdict
		incomplete bool
		want       int
	}{
		{[]Verdict{VerdictPass, VerdictNotSupported}, false, 0},
		{[]Verdict{VerdictPass, VerdictPartial}, false, 4},
		{[]Verdict{VerdictPartial, VerdictFail}, false, 3},
		{[]Verdict{VerdictPass}, true, 2},
	} {
		r := &ConformanceReport{Incomplete: c.incomplete}
		for _, v := range c.verdicts {
			r.Profiles = append(r.Profiles, ProfileResult{Verdict: v})
		}
		if got := r.ExitCode(); got != c.want {
			t.Errorf("ExitCode(%v, incomplete=%v) = %d, want %d", c.verdicts, c.incomplete, got, c.want)
		}
	}
}

func TestRenderings(t *testing.T) {
	r := sampleReport("triton", StatusFailed)
	var text, md bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAIL    OIP-REST-INFER-006 [MUST]", "OIP-REST-CORE", "FAIL"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"| OIP-REST-INFER-006 | MUST | failed |", "POST /v2/models/add_sub/infer", "waived: no fixture"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestMatrix(t *testing.T) {
	var b bytes.Buffer
	cols := []MatrixColumn{{Report: sampleReport("triton", StatusFailed)}, {Report: sampleReport("mlserver", StatusPassed), Name: "MLServer"}}
	omitted, err := WriteMatrix(&b, cols)
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| | triton 1.0 | MLServer |", "| OIP-REST-INFER-006 (MUST) | [**fail**](#c1-oip-rest-infer-006) | pass |",
		"| OIP-REST-ERR-003 (SHOULD) | warn | warn |", "| **OIP-REST-CORE** | **fail** | **fail** |"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q:\n%s", want, out)
		}
	}
	if omitted != 1 || strings.Contains(out, "OIP-EXT-BIN-014") {
		t.Errorf("omitted %d; the requirement nobody checked (OIP-EXT-BIN-014) must be left out:\n%s", omitted, out)
	}
	if _, err := WriteMatrix(&b, nil); err == nil {
		t.Error("WriteMatrix(nil): no error")
	}
}

// Every failed requirement in the compatibility document carries the
// catalog's citation and the evidence of its failed check, under the
// anchor its matrix cell links to.
func TestCompatibility(t *testing.T) {
	var b bytes.Buffer
	cols := []MatrixColumn{{Report: sampleReport("triton", StatusFailed), Links: []string{"[report](runtimes/pytriton/report.md)"}},
		{Report: sampleReport("mlserver", StatusPassed)}}
	cite := func(id string) (Citation, bool) {
		return Citation{Level: "MUST", Statement: "the id is echoed", Source: "OIP-REST §Inference Request JSON Object"}, id == "OIP-REST-INFER-006"
	}
	if err := WriteCompatibility(&b, cols, cite); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`<a id="c1-oip-rest-infer-006"></a>`,
		"#### triton 1.0 — OIP-REST-INFER-006 (MUST)",
		"Spec: the id is echoed *Src:* OIP-REST §Inference Request JSON Object.",
		"POST /v2/models/add_sub/infer",
		`{"model_name":"add_sub"}`,
		"Details: [report](runtimes/pytriton/report.md)",
		"### mlserver 1.0: 0 failed",
		"- **OIP-REST-ERR-003** (SHOULD)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("compatibility document lacks %q:\n%s", want, out)
		}
	}
}
