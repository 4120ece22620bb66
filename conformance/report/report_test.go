package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/verdict"
)

func sampleReport(name string, status Status) *ConformanceReport {
	rs := []RequirementResult{
		{ID: "OIP-REST-INFER-006", Level: "MUST", Blocking: true, Status: status,
			Findings: []Finding{{Spec: "echoes a plain id", Class: ClassFail, Message: "id is \"\", want \"42\"",
				Evidence: &Evidence{Request: Message{Method: "POST", Target: "/v2/models/add_sub/infer", Body: `{"id":"42"}`},
					Response: Message{Status: "HTTP 200", Body: `{"model_name":"add_sub"}`}}}}},
		{ID: "OIP-REST-ERR-003", Level: "SHOULD", Status: StatusWarning},
		{ID: "OIP-REST-INFER-010", Level: "MUST", Binds: "client", Status: StatusLenient, Statement: "Every input shape dimension is an integer.",
			Findings: []Finding{{Spec: "rejects a string shape dimension", Class: ClassLenient, Message: "got 200, want an error status",
				Evidence: &Evidence{Request: Message{Method: "POST", Target: "/v2/models/add_sub/infer"}, Response: Message{Status: "HTTP 200"}}}}},
		{ID: "OIP-EXT-BIN-014", Level: "MAY", Status: StatusNotCovered, Reason: "waived: no fixture"},
	}
	return &ConformanceReport{
		APIVersion: APIVersion, Kind: Kind,
		Implementation: Implementation{Name: name, Version: "1.0"},
		Date:           time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC),
		Profiles:       []ProfileResult{{Name: "OIP-REST-CORE", Verdict: verdict.Failed}},
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
	if got.Implementation != r.Implementation || len(got.Requirements) != 4 ||
		got.Requirements[0].Findings[0].Evidence.Request.Target != "/v2/models/add_sub/infer" {
		t.Errorf("round trip lost data: %+v", got)
	}
	if _, err := Read(strings.NewReader(`{"apiVersion":"v0","kind":"ConformanceReport"}`)); err == nil {
		t.Error("Read accepted a report with the wrong apiVersion")
	}
}

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		verdicts   []verdict.Status
		incomplete bool
		want       int
	}{
		{[]verdict.Status{verdict.Pass, verdict.NotSupported}, false, 0},
		{[]verdict.Status{verdict.Pass, verdict.Inconclusive}, false, 4},
		{[]verdict.Status{verdict.Inconclusive, verdict.Failed}, false, 3},
		{[]verdict.Status{verdict.Pass}, true, 2},
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

// TestReadsOldVerdictWords: a report written before package verdict, with
// "fail" and "partial", reads as failed and inconclusive and is written
// back in today's words.
func TestReadsOldVerdictWords(t *testing.T) {
	r := sampleReport("triton", StatusFailed)
	r.Profiles = []ProfileResult{{Name: "A", Verdict: verdict.Failed}, {Name: "B", Verdict: verdict.Inconclusive}}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(strings.Replace(b.String(), `"verdict": "failed"`, `"verdict": "fail"`, 1), `"verdict": "inconclusive"`, `"verdict": "partial"`, 1)
	if old == b.String() {
		t.Fatal("no verdict word to replace in:\n" + b.String())
	}
	got, err := Read(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if got.Profiles[0].Verdict != verdict.Failed || got.Profiles[1].Verdict != verdict.Inconclusive || got.ExitCode() != 3 {
		t.Errorf("read %q, %q (exit %d), want failed, inconclusive (exit 3)", got.Profiles[0].Verdict, got.Profiles[1].Verdict, got.ExitCode())
	}
	if _, err := Read(strings.NewReader(strings.Replace(b.String(), `"verdict": "failed"`, `"verdict": "broken"`, 1))); err == nil {
		t.Error("an unknown verdict word was accepted")
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
	for _, want := range []string{"FAIL    OIP-REST-INFER-006 [MUST]", "LENIENT OIP-REST-INFER-010 [MUST]", "OIP-REST-CORE", "1 lenient", "--strict makes them fail"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"| OIP-REST-INFER-006 | MUST |  | **failed** |", "| OIP-REST-INFER-010 | MUST | client | **lenient** | Every input shape dimension is an integer. |",
		"### OIP-REST-INFER-010 (MUST) — lenient", "POST /v2/models/add_sub/infer", "waived: no fixture"} {
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
		"| OIP-REST-ERR-003 (SHOULD) | warn | warn |", "| OIP-REST-INFER-010 (MUST) | lenient | lenient |", "| **OIP-REST-CORE** | **failed** | **failed** |"} {
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
	cols := []MatrixColumn{{Report: sampleReport("triton", StatusFailed), Links: []DocLink{{Text: "report", Href: "runtimes/pytriton/report.md"}}},
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
		"## Lenient", "- **OIP-REST-INFER-010** (MUST): got 200, want an error status",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("compatibility document lacks %q:\n%s", want, out)
		}
	}
}

// Reports written before finding classes said "grade": "failure".
func TestReadLegacyGrade(t *testing.T) {
	in := `{"apiVersion":"oipkit.dev/v1alpha1","kind":"ConformanceReport","implementation":{"name":"x"},
"requirements":[{"id":"OIP-REST-INFER-006","status":"failed","findings":[{"spec":"s","grade":"failure","message":"m"},{"spec":"s","grade":"warning","message":"w"}]}]}`
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	fs := r.Requirements[0].Findings
	if fs[0].Class != ClassFail || fs[1].Class != ClassWarning {
		t.Errorf("classes %q, %q; want fail, warning", fs[0].Class, fs[1].Class)
	}
}

// The text summary names every disagreement between what a server
// advertises and what the probes observed.
func TestExtensionLine(t *testing.T) {
	r := sampleReport("x", StatusPassed)
	r.Extensions = []ExtensionResult{
		{Name: "binary_tensor_data", Advertised: false, Probe: ProbeObserved, Tested: true},
		{Name: "model_configuration", Advertised: true, Probe: ProbeAbsent, Tested: true},
		{Name: "statistics", Advertised: true, Probe: ProbeNone},
		{Name: "trace", Probe: ProbeNone},
	}
	r.UnknownExtensions = []string{"model_repository_extension"}
	var text, md bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	want := "extensions: binary_tensor_data (NOT advertised, observed), model_configuration (advertised, ABSENT), statistics (advertised, not-probed); advertised outside the vocabulary: model_repository_extension"
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| binary_tensor_data | **no** | **observed** | true |", "| model_configuration | yes | **absent** | true |", "outside the vocabulary (not tested): model_repository_extension"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if strings.Contains(md.String(), "| trace |") {
		t.Error("Markdown lists an extension neither advertised nor observed")
	}
}
