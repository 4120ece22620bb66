package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/verdict"
)

// hostileReport is sampleReport with server-controlled text that would
// break out of the page if it were not escaped.
func hostileReport() *ConformanceReport {
	r := sampleReport("evil</title><script>alert(1)</script>", StatusFailed)
	r.Requirements[0].Findings[0].Message = "got </pre><script>alert(2)</script>\nsecond line"
	r.Requirements[0].Findings[0].Evidence.Response.Body = `<img src="http://127.0.0.1:9/x.png">`
	r.Requirements[0].Findings[0].Evidence.Response.Header = map[string][]string{"X-Evil": {"<b>bold</b>"}}
	r.Requirements = append(r.Requirements, RequirementResult{ID: "OIP-REST-INFER-002", Level: "MUST", Status: StatusSkipped,
		Reason: "fixture not deployed: versioned"})
	r.Counts = Count(r.Requirements)
	r.Profiles = append(r.Profiles, ProfileResult{Name: "OIP-GRPC-CORE", Verdict: verdict.Inconclusive, Skipped: []string{"OIP-REST-INFER-002"}})
	r.Extensions = []ExtensionResult{{Name: "binary_tensor_data", Advertised: true, Probe: ProbeAbsent, Tested: true,
		Detail: "got 400", Evidence: &Evidence{Request: Message{Method: "POST", Target: "/v2/models/add_sub/infer"}, Response: Message{Status: "HTTP 400"}}}}
	return r
}

var (
	hrefPattern = regexp.MustCompile(`href="#([^"]*)"`)
	idPattern   = regexp.MustCompile(` id="([^"]*)"`)
)

// checkPage checks what every conformance page must be: escaped, offline,
// and with every in-page link landing on an element.
func checkPage(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script>alert(", `<img src="http`, "<b>bold", "</title><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("server text reached the page unescaped: %q", bad)
		}
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) || strings.Contains(page, "<link ") {
		t.Error("the page refers to something outside itself")
	}
	ids := map[string]bool{}
	for _, m := range idPattern.FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Errorf("id %q is used twice", m[1])
		}
		ids[m[1]] = true
	}
	for _, m := range hrefPattern.FindAllStringSubmatch(page, -1) {
		if !ids[m[1]] {
			t.Errorf("link to #%s, which is not on the page", m[1])
		}
	}
	if strings.Contains(page, "uPlot") {
		t.Error("a page without charts carries uPlot")
	}
}

func TestConformanceHTML(t *testing.T) {
	r := hostileReport()
	cite := func(id string) (Citation, bool) {
		return Citation{Source: "OIP-REST §Inference Request JSON Object"}, id == "OIP-REST-INFER-006"
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, cite); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	checkPage(t, page)
	for _, want := range []string{
		"<title>OIP conformance: evil&lt;/title&gt;",
		`<span class="vd vd-failed"`, // the worst verdict heads the page
		// every requirement, with its status in words
		`id="req-oip-rest-infer-006"`, "✗ FAIL", `id="req-oip-rest-err-003"`, ">warn<", ">lenient<", ">skip<", ">not covered<",
		"why: ", "fixture not deployed: versioned",
		// the finding: its spec, citation, message, and the evidence folded
		"Check: echoes a plain id", "Spec: OIP-REST §Inference Request JSON Object", "got &lt;/pre&gt;&lt;script&gt;alert(2)",
		`<details class="evidence"><summary>Evidence: <code>POST /v2/models/add_sub/infer → HTTP 200</code>`,
		"&lt;img src=&#34;http://127.0.0.1:9/x.png&#34;&gt;", "X-Evil: &lt;b&gt;bold&lt;/b&gt;",
		// profiles link their requirements; extensions show disagreement
		`<a href="#req-oip-rest-infer-002">OIP-REST-INFER-002</a>`, "INCONCLUSIVE", `<tr class="disagrees">`,
		// the status filter, plain HTML and CSS
		`<input type="radio" name="f" id="f-failed">`, `main:has(#f-failed:checked) tr.rq:not(.s-failed)`,
		`<th scope="row" class="l id">`, `<th scope="col"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="f-not-run"`) {
		t.Error("a filter for a status no requirement has")
	}
	if strings.Contains(page, "<details class=\"evidence\" open") {
		t.Error("evidence is not folded")
	}
}

// A requirement with many findings shows the first few and folds the rest;
// fail findings come first.
func TestConformanceHTMLFoldsManyFindings(t *testing.T) {
	r := sampleReport("x", StatusFailed)
	q := &r.Requirements[0]
	q.Findings = nil
	for i := 0; i < 5; i++ {
		q.Findings = append(q.Findings, Finding{Spec: "s", Class: ClassWarning, Message: "warning " + string(rune('a'+i))})
	}
	q.Findings = append(q.Findings, Finding{Spec: "s", Class: ClassFail, Message: "the failure"})
	var b bytes.Buffer
	if err := WriteHTML(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "3 more findings") {
		t.Error("findings beyond the first three are not folded")
	}
	if strings.Index(page, "the failure") > strings.Index(page, "warning a") {
		t.Error("a warning is listed before the failure")
	}
}

func TestCompatibilityHTML(t *testing.T) {
	a, b := hostileReport(), sampleReport("mlserver", StatusPassed)
	b.Requirements = append(b.Requirements, RequirementResult{ID: "OIP-GRPC-INFER-001", Level: "MUST", Status: StatusPassed})
	b.Counts = Count(b.Requirements)
	cols := []MatrixColumn{{Report: a, Name: "pytriton: triton 1.0", Links: []DocLink{{Text: "report", Href: "runtimes/pytriton/report.html"}}}, {Report: b}}
	blocked := []BlockedRow{{Blocked: &Blocked{Implementation: Implementation{Name: "OpenVINO Model Server"},
		Reason: "Ships only as container images. Run it elsewhere, then:", Commands: []string{"oipkit conform --http http://127.0.0.1:8000"}},
		Links: []DocLink{{Text: "notes", Href: "runtimes/ovms/README.md"}}}}
	cite := func(id string) (Citation, bool) {
		return Citation{Statement: "the id is echoed", Source: "OIP-REST §Inference Request JSON Object"}, id == "OIP-REST-INFER-006"
	}
	var buf bytes.Buffer
	if err := WriteCompatibilityHTML(&buf, cols, blocked, cite); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	checkPage(t, page)
	for _, want := range []string{
		// columns: the directory's name over the implementation's; blocked ones with their reason
		`<span class="impl">pytriton</span><span class="ver">triton 1.0</span>`, `<span class="impl">mlserver</span><span class="ver">1.0</span>`,
		`<span class="impl">OpenVINO Model Server</span><span class="ver">not run here</span>`,
		"<strong>Not run here</strong>Ships only as container images.", "<code>oipkit conform --http http://127.0.0.1:8000</code>",
		`<a href="runtimes/pytriton/report.html">report</a>`, `<a href="runtimes/ovms/README.md">notes</a>`,
		// verdicts, counts, group summary
		"✗ FAILED", `<td class="gc st-failed"><a href="#impl-c1">1</a></td>`, `<a href="#grp-oip-rest-infer">OIP-REST-INFER</a>`,
		// the grid: grouped rows, words in every cell, failed cells linked to folded evidence
		`<tbody class="grp any-fail attention differs" id="grp-oip-rest-infer">`,
		`<th scope="rowgroup" colspan="4" class="l">OIP-REST-INFER`,
		`<td class="c st-failed" title="failed: got &lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;"><a href="#c1-oip-rest-infer-006">✗ FAIL</a></td>`,
		`<td class="c st-passed" title="every check of the requirement passed">✓ pass</td>`,
		`<td class="c st-not-covered" title="no result in this report">—</td>`,
		`<details class="req" id="c1-oip-rest-infer-006">`, "Spec: OIP-REST §Inference Request JSON Object",
		`<details class="req" id="c1-oip-rest-infer-010">`, `<details class="req" id="c2-oip-rest-err-003">`,
		// the filter
		`id="m-fail"`, "main:has(#m-fail:checked) tr.rq:not(.any-fail)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Left out, as in the Markdown matrix: nobody has a result for it.
	if strings.Contains(page, "<th scope=\"row\" class=\"id\">OIP-EXT-BIN-014") {
		t.Error("a requirement no implementation has a result for is a row")
	}
	if err := WriteCompatibilityHTML(&buf, nil, blocked, nil); err == nil {
		t.Error("no reports: no error")
	}
}
