package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// failedOn is a fail finding on one exchange: the request body and the
// answer's status and body tell exchanges apart; date is the answer's Date.
func failedOn(spec, reqBody, status, date string) Finding {
	return Finding{Spec: spec, Class: ClassFail, Message: "POST /v2/models/add_sub/infer: got " + status + ", want 200",
		Evidence: &Evidence{
			Request:  Message{Method: "POST", Target: "/v2/models/add_sub/infer", Header: map[string][]string{"Content-Type": {"application/json"}}, Body: reqBody, BodyBytes: len(reqBody)},
			Response: Message{Status: "HTTP " + status, Header: map[string][]string{"Date": {date}, "X-Request-Id": {date}}, Body: `{"error":"boom"}`, BodyBytes: 16},
		}}
}

func defectsReport() *ConformanceReport {
	rs := []RequirementResult{
		{ID: "OIP-REST-INFER-001", Level: "MUST", Status: StatusFailed, Statement: "A valid request answers 200.",
			Findings: []Finding{failedOn("answers add_sub", `{"a":1}`, "500", "Mon"), failedOn("answers add_sub again", `{"a":2}`, "500", "Mon")}},
		{ID: "OIP-REST-RESP-001", Level: "MUST", Status: StatusFailed, Statement: "A success is 200.",
			// The same exchange as INFER-001's first, at another time.
			Findings: []Finding{failedOn("answers success with 200", `{"a":1}`, "500", "Tue"),
				{Spec: "a warning", Class: ClassWarning, Message: "tolerated", Evidence: failedOn("x", `{"w":1}`, "500", "Tue").Evidence}}},
		{ID: "OIP-REST-ERR-003", Level: "SHOULD", Status: StatusWarning,
			Findings: []Finding{{Spec: "a warning", Class: ClassWarning, Message: "got 500"}}},
	}
	return &ConformanceReport{APIVersion: APIVersion, Kind: Kind, Implementation: Implementation{Name: "kserve", Version: "0.21.0"},
		Targets: Targets{HTTP: "http://127.0.0.1:8000"}, Counts: Count(rs), Requirements: rs}
}

// TestDefectsOnePerFailedRequirement: once Block has taken the cascades
// out, each failed requirement is one defect with every check that failed
// it, naming the requirements it blocks; RESP-001, failing only on an
// exchange INFER-001 fails (whatever its Date and X-Request-Id), is
// blocked by it; warnings of a run that is not strict are none.
func TestDefectsOnePerFailedRequirement(t *testing.T) {
	r := defectsReport()
	Block(r.Requirements, nil)
	ds := Defects(r)
	if len(ds) != 1 || ds[0].IDs[0] != "OIP-REST-INFER-001" || len(ds[0].Checks) != 2 || ds[0].Exchanges() != 2 {
		t.Fatalf("defects %+v, want one: INFER-001 with 2 checks on 2 exchanges", ds)
	}
	if got := strings.Join(ds[0].Blocked, ","); got != "OIP-REST-RESP-001" {
		t.Errorf("INFER-001 blocks %q, want OIP-REST-RESP-001", got)
	}
	if n := r.DistinctDefects(); n != len(ds) {
		t.Errorf("DistinctDefects %d, findings %d: two meanings of a defect", n, len(ds))
	}
	// Under --strict a warning fails its requirement, and is its defect.
	r.Requirements[2].Status = StatusFailed
	if ds := Defects(r); len(ds) != 2 || ds[1].IDs[0] != "OIP-REST-ERR-003" {
		t.Errorf("strict: %d defects, want a second for OIP-REST-ERR-003", len(ds))
	}
}

func TestWriteFindings(t *testing.T) {
	cite := func(id string) (Citation, bool) {
		return Citation{Level: "MUST", Statement: "quoted " + id, Source: "OIP-REST §Inference"}, true
	}
	var b bytes.Buffer
	r := defectsReport()
	Block(r.Requirements, nil)
	if err := WriteFindings(&b, r, cite); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# Findings: kserve 0.21.0\n",
		"1 distinct defect(s), one per failed requirement: OIP-REST-INFER-001.",
		"## 1. POST /v2/models/add_sub/infer: got 500, want 200\n",
		"- **Affected requirements:** OIP-REST-INFER-001\n",
		"- **Blocked by it (not graded):** OIP-REST-RESP-001\n",
		"> **OIP-REST-INFER-001** (MUST): quoted OIP-REST-INFER-001\n> — OIP-REST §Inference\n",
		"**Reproducer:**\n\n```sh\nprintf '%s' '{\"a\":1}' |\n  curl -sS -i http://127.0.0.1:8000/v2/models/add_sub/infer -H 'Content-Type: application/json' --data-binary @-\n```\n",
		"**Expected:**\n\n- OIP-REST-INFER-001: 200\n\n",
		"**Observed:**\n\n```\nHTTP 500\nDate: Mon\nX-Request-Id: Mon\n\n{\"error\":\"boom\"}\n```\n",
		"**Failed checks** (on 2 exchanges; report.md has each one's request and answer):\n\n- OIP-REST-INFER-001: answers add_sub\n- OIP-REST-INFER-001: answers add_sub again\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("findings file lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "## 2. ") || strings.Contains(out, "a warning") {
		t.Errorf("findings file lists a warning as a defect:\n%s", out)
	}
}

// TestTextSummaryListsEveryFailedRequirement: however many exchanges one
// requirement fails on, the summary stays short and names every failed one.
func TestTextSummaryListsEveryFailedRequirement(t *testing.T) {
	var fs []Finding
	for i := range 60 {
		fs = append(fs, failedOn("many", fmt.Sprintf(`{"i":%d}`, i), "500", "Mon"))
	}
	r := defectsReport()
	r.Requirements[0].Findings = fs
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n"); n > 30 {
		t.Errorf("summary of 61 defects is %d lines:\n%s", n, out)
	}
	for _, want := range []string{"FAIL    OIP-REST-INFER-001 [MUST]", "FAIL    OIP-REST-RESP-001 [MUST]", "(and 59 more failing exchange(s))"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A defect's reproducer is an exact one when it has one: a check whose
// request the report kept only in part goes after it.
func TestDefectLeadsWithAnExactReproducer(t *testing.T) {
	r := defectsReport()
	clipped := failedOn("huge request", `{"big":1}`, "500", "Mon")
	clipped.Evidence.Request.BodyBytes = 1 << 20 // the report kept 9 of its bytes
	r.Requirements[0].Findings = append([]Finding{clipped}, r.Requirements[0].Findings...)
	ds := Defects(r)
	if got := ds[0].First().Finding.Spec; got != "answers add_sub" {
		t.Errorf("first check %q, want the first with an exact reproducer (answers add_sub)", got)
	}
	if !strings.Contains(ds[0].Checks[1].Finding.ReproducerFor(r.Targets), "NOT EXACT") {
		t.Errorf("the clipped check's reproducer is not marked NOT EXACT:\n%s", ds[0].Checks[1].Finding.ReproducerFor(r.Targets))
	}
}
