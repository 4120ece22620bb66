package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/htmlpage/browser"
	"github.com/oipkit/oipkit/verdict"
)

// committedRuntimes are the runtimes with committed conformance reports, in
// the column order interop/all.sh gives the compatibility matrix.
var committedRuntimes = []string{"reference", "triton", "pytriton", "mlserver", "kserve", "torchserve"}

// reportPageProbe runs in the browser on a conformance report page: the
// in-page links that land nowhere, the requirement rows shown, whether the
// evidence is folded, and what each status filter shows (rows, and rows of
// another status).
const reportPageProbe = `(() => {
  const shown = sel => [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length > 0);
  const out = {
    broken: [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href").slice(1)).filter(id => !document.getElementById(id)),
    rows: shown("tr.rq:not(.fnd)").length,
    evidence: document.querySelectorAll("details.evidence").length,
    unfolded: document.querySelectorAll("details[open]").length,
    wordless: shown("tr.rq .st").filter(e => e.textContent.trim() === "").length,
    filters: {},
  };
  for (const input of document.querySelectorAll("fieldset.filter input")) {
    input.click();
    const rows = shown("tr.rq:not(.fnd)");
    const status = input.id.slice(2);
    out.filters[status] = {rows: rows.length, other: rows.filter(r => !r.classList.contains("s-" + status)).length};
  }
  return out;
})()`

type reportProbe struct {
	Broken   []string
	Rows     int
	Evidence int
	Unfolded int
	Wordless int
	Filters  map[string]struct{ Rows, Other int }
}

// checkReportPage opens a conformance report page and checks it against
// its report: every requirement shown, the filters showing exactly the
// requirements of their status, evidence folded, links landing.
func checkReportPage(t *testing.T, page string, r *report.ConformanceReport) {
	t.Helper()
	rep := openInBrowser(t, page, browser.Options{Height: 1400, ViewportOnly: true, Eval: reportPageProbe})
	var p reportProbe
	if err := json.Unmarshal([]byte(rep.Eval), &p); err != nil {
		t.Fatalf("probe: %v (%s)", err, rep.Eval)
	}
	if len(p.Broken) > 0 || p.Unfolded > 0 || p.Wordless > 0 {
		t.Errorf("links to nothing %v, %d details open, %d statuses without a word", p.Broken, p.Unfolded, p.Wordless)
	}
	if p.Rows != len(r.Requirements) {
		t.Errorf("%d requirement rows, the report has %d", p.Rows, len(r.Requirements))
	}
	attention := 0
	for _, s := range report.Statuses {
		n := r.Counts[s]
		f, ok := p.Filters[string(s)]
		switch {
		case n == 0 && ok:
			t.Errorf("a filter for %s, which no requirement has", s)
		case n > 0 && (f.Rows != n || f.Other != 0):
			t.Errorf("filter %s shows %d rows (%d of another status), want %d", s, f.Rows, f.Other, n)
		}
		if s == report.StatusFailed || s == report.StatusBlocked || s == report.StatusLenient || s == report.StatusWarning || s == report.StatusSkipped || s == report.StatusNotRun {
			attention += n
		}
	}
	if f := p.Filters["all"]; f.Rows != len(r.Requirements) {
		t.Errorf("filter all shows %d rows, want %d", f.Rows, len(r.Requirements))
	}
	if f := p.Filters["attention"]; f.Rows != attention {
		t.Errorf("filter 'needs a look' shows %d rows, want %d", f.Rows, attention)
	}
	findings := 0
	for _, q := range r.Requirements {
		for _, f := range q.Findings {
			if f.Evidence != nil {
				findings++
			}
		}
	}
	if p.Evidence < findings {
		t.Errorf("%d folded evidence blocks, the report has %d findings with evidence", p.Evidence, findings)
	}
}

// A real run writes report.html beside report.json, and it opens cleanly.
func TestBrowserConformRunHTML(t *testing.T) {
	dir := t.TempDir()
	runOipkit(t, "conform", "--report-dir", dir).expect(t, "conform against the bundled reference", verdict.ExitPass)
	r, err := report.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkReportPage(t, filepath.Join(dir, "report.html"), r)
}

// conform --from renders a committed report with failures, lenient
// requirements and warnings again; its page shows each with its evidence.
func TestBrowserConformReportHTML(t *testing.T) {
	src := "../../reports/runtimes/mlserver/report.json"
	r, err := report.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"conform", "--from", src, "--report-dir", dir}, &stdout, &stderr); code != r.ExitCode() {
		t.Fatalf("exit %d, want the report's %d: %s", code, r.ExitCode(), stderr.String())
	}
	for _, f := range []string{"report.json", "report.md", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	checkReportPage(t, filepath.Join(dir, "report.html"), r)
}

func TestConformFromUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"conform", "--from", "does-not-exist.json"},
		{"conform", "--from", "../../reports/runtimes/mlserver/report.json", "--http", "http://127.0.0.1:1"},
	} {
		if code := run(context.Background(), args, &stdout, &stderr); code != verdict.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, verdict.ExitUsage)
		}
	}
}

// matrixPageProbe runs in the browser on a compatibility page: links that
// land nowhere, grid cells without a word, the blocked implementations
// shown, and what each row filter shows.
const matrixPageProbe = `(() => {
  const shown = sel => [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length > 0);
  const out = {
    broken: [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href").slice(1)).filter(id => !document.getElementById(id)),
    wordless: [...document.querySelectorAll("td.c, td.gc")].filter(c => c.textContent.trim() === "").length,
    blocked: document.querySelectorAll("td.blocked").length,
    columns: document.querySelectorAll("table.matrix thead th[scope=col]").length,
    rows: shown("table.matrix tr.rq").length,
    unfolded: document.querySelectorAll("details[open]").length,
  };
  document.getElementById("m-fail").click();
  const failing = shown("table.matrix tr.rq");
  out.failRows = failing.length;
  out.failOther = failing.filter(r => !r.querySelector("td.st-failed")).length;
  document.getElementById("m-differs").click();
  const differ = shown("table.matrix tr.rq");
  out.differRows = differ.length;
  out.differSame = differ.filter(r => new Set([...r.querySelectorAll("td.c")].map(c => c.className)).size < 2).length;
  return out;
})()`

// The committed runtime reports and blocked implementations as one HTML
// matrix: every cell in words, the failure filter showing only rows with a
// failure, blocked implementations with their reason.
func TestBrowserMatrixHTML(t *testing.T) {
	var args []string
	failed := map[string]bool{}
	for _, rt := range committedRuntimes {
		path := "../../reports/runtimes/" + rt + "/report.json"
		r, err := report.ReadFile(path)
		if err != nil {
			t.Skip(err)
		}
		for _, id := range r.WithStatus(report.StatusFailed) {
			failed[id] = true
		}
		args = append(args, path)
	}
	blocked, _ := filepath.Glob("../../reports/runtimes/*/blocked.json")
	args = append(args, blocked...)
	page := filepath.Join(t.TempDir(), "compatibility.html")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"matrix", "--html", page}, args...), &stdout, &stderr); code != verdict.ExitPass {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() > 0 {
		t.Error("matrix --html without -o also printed the Markdown")
	}
	rep := openInBrowser(t, page, browser.Options{Height: 1400, ViewportOnly: true, Eval: matrixPageProbe})
	var p struct {
		Broken                                      []string
		Wordless, Blocked, Columns, Rows, Unfolded  int
		FailRows, FailOther, DifferRows, DifferSame int
	}
	if err := json.Unmarshal([]byte(rep.Eval), &p); err != nil {
		t.Fatalf("probe: %v (%s)", err, rep.Eval)
	}
	if len(p.Broken) > 0 || p.Wordless > 0 || p.Unfolded > 0 {
		t.Errorf("links to nothing %v, %d cells without a word, %d details open", p.Broken, p.Wordless, p.Unfolded)
	}
	if p.Blocked != len(blocked) || p.Columns != 2+len(committedRuntimes) {
		t.Errorf("%d blocked cells for %d blocked implementations; %d grid columns, want %d", p.Blocked, len(blocked), p.Columns, 2+len(committedRuntimes))
	}
	if p.FailRows != len(failed) || p.FailOther != 0 {
		t.Errorf("the failure filter shows %d rows (%d without a failure); %d requirements failed somewhere", p.FailRows, p.FailOther, len(failed))
	}
	if p.DifferRows == 0 || p.DifferSame != 0 || p.DifferRows >= p.Rows {
		t.Errorf("the 'differ' filter shows %d of %d rows, %d of them alike", p.DifferRows, p.Rows, p.DifferSame)
	}
}

// The committed pages (reports/compatibility.html, each runtime's
// report.html) are what the code renders from the committed reports:
// regenerate them with `make conformance-pages` after changing the
// rendering.
func TestCommittedConformancePages(t *testing.T) {
	root := "../../reports"
	tmp := filepath.Join(t.TempDir(), "reports")
	var args []string
	copyFile := func(rel string) bool {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return false
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return true
	}
	for _, rt := range committedRuntimes {
		if !copyFile(filepath.Join("runtimes", rt, "report.json")) {
			t.Skipf("no committed report for %s", rt)
		}
		copyFile(filepath.Join("runtimes", rt, "README.md"))
		dir := filepath.Join(tmp, "runtimes", rt)
		var stdout, stderr bytes.Buffer
		run(context.Background(), []string{"conform", "--from", filepath.Join(dir, "report.json")}, &stdout, &stderr)
		same(t, filepath.Join(root, "runtimes", rt, "report.html"), filepath.Join(dir, "report.html"))
		args = append(args, filepath.Join(dir, "report.json"))
	}
	blocked, _ := filepath.Glob(filepath.Join(root, "runtimes", "*", "blocked.json"))
	for _, b := range blocked {
		rel, _ := filepath.Rel(root, b)
		copyFile(rel)
		copyFile(filepath.Join(filepath.Dir(rel), "README.md"))
		args = append(args, filepath.Join(tmp, rel))
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"matrix", "--html", filepath.Join(tmp, "compatibility.html")}, args...), &stdout, &stderr); code != verdict.ExitPass {
		t.Fatalf("matrix: exit %d: %s", code, stderr.String())
	}
	same(t, filepath.Join(root, "compatibility.html"), filepath.Join(tmp, "compatibility.html"))
}

// same fails the test when the committed file differs from the one just
// rendered.
func same(t *testing.T, committed, rendered string) {
	t.Helper()
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Errorf("%s: %v (make conformance-pages writes it)", committed, err)
		return
	}
	got, err := os.ReadFile(rendered)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: it differs from what oipkit renders from the committed reports; run make conformance-pages", committed)
	}
}
