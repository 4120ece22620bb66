package selftest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/conformance/report"
)

// kserveLike breaks a server the way KServe 0.21 is broken: every refusal
// of an inference is a 422 whose body echoes the request (a distinct
// answer, so a distinct defect, for each malformed request) and every
// answer to a request without an id is a 500. It fails many requirements
// with many findings each.
var kserveLike = breakage{name: "kserve-like", rest: &restHook{out: func(r *http.Request, a *answer) {
	if !isInfer(r) {
		return
	}
	body := requestBody(r)
	switch {
	case a.status >= 400:
		a.status = 422
		a.body = fmt.Appendf(nil, `{"detail":[{"msg":"validation error","input":%q}]}`, body)
	case !strings.Contains(string(body), `"id"`):
		a.status = 500
		a.body = []byte(`{"error":"ValidationError : 1 validation error for InferenceResponse\nid\n  Input should be a valid string"}`)
	}
	a.header.Set("Content-Type", "application/json")
}}}

// TestTerminalTellsTheStory: against a badly broken server, `oipkit
// conform` prints a short story (at most 60 lines, no ginkgo failure dumps,
// no source paths) naming every failed requirement, while report.md still
// holds every finding; -v keeps ginkgo's stream and adds reproducers.
func TestTerminalTellsTheStory(t *testing.T) {
	httpURL, grpcAddr := brokenServer(t, kserveLike)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil || run.exit != 3 {
		t.Fatalf("exit %d, want 3 (failed)\n%s", run.exit, lastLines(run.output, 40))
	}
	failed := run.report.WithStatus("failed")
	findings := 0
	for _, q := range run.report.Requirements {
		findings += len(q.Findings)
	}
	if len(failed) < 5 || findings < 30 {
		t.Fatalf("the breakage failed %d requirements with %d findings, want a badly broken server", len(failed), findings)
	}
	lines := strings.Count(run.output, "\n")
	t.Logf("%d failed requirements, %d findings, %d lines of output", len(failed), findings, lines)
	if lines > 60 {
		t.Errorf("output is %d lines, want at most 60:\n%s", lines, run.output)
	}
	for _, bad := range []string{".go:", "TOP-LEVEL", "[FAILED]", "[AfterEach]"} {
		if strings.Contains(run.output, bad) {
			t.Errorf("output holds %q:\n%s", bad, run.output)
		}
	}
	for _, id := range failed {
		// Named on its own FAIL line, in the "and N more" list, or at the
		// start of that list's continuation line.
		if !strings.Contains(run.output, "FAIL    "+id) && !strings.Contains(run.output, ", "+id) && !strings.Contains(run.output, "): "+id) &&
			!regexp.MustCompile(`\n {10,}`+regexp.QuoteMeta(id)+`,?( |\n|$)`).MatchString(run.output) {
			t.Errorf("output does not name failed requirement %s:\n%s", id, run.output)
		}
	}
	for _, want := range []string{"running ", "ran ", "OIP-REST-CORE", "reports written to " + run.dir} {
		if !strings.Contains(run.output, want) {
			t.Errorf("output lacks %q:\n%s", want, run.output)
		}
	}
	md, err := os.ReadFile(filepath.Join(run.dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(md), "\nReproducer:\n"); got != findings {
		t.Errorf("report.md has %d reproducers, report.json %d findings", got, findings)
	}
	for _, q := range run.report.Requirements {
		for _, f := range q.Findings {
			if f.Evidence == nil {
				continue
			}
			// Only a body over the bound is not sent exactly: a REST one
			// (BodyBytes), or an RPC's (its evidence, clipped, tells).
			req := f.Evidence.Request
			big := req.BodyBytes > report.MaxReproducerBody || strings.HasPrefix(req.Method, "RPC") && strings.HasSuffix(req.Body, "…")
			if f.Reproducer == "" || strings.Contains(f.Reproducer, "# NOT EXACT") && !big {
				t.Errorf("%s: finding %q has reproducer %q", q.ID, f.Spec, f.Reproducer)
			}
		}
	}

	verbose := conform(t, "--http", httpURL, "--grpc", grpcAddr, "-v")
	if verbose.exit != 3 {
		t.Fatalf("-v: exit %d, want 3", verbose.exit)
	}
	for _, want := range []string{"[FAILED]", "curl -sS -i " + httpURL} {
		if !strings.Contains(verbose.output, want) {
			t.Errorf("-v output lacks %q", want)
		}
	}
}
