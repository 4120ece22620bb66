package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/verdict"
)

func extension(r *report.ConformanceReport, name string) report.ExtensionResult {
	for _, e := range r.Extensions {
		if e.Name == name {
			return e
		}
	}
	return report.ExtensionResult{}
}

// TestBinaryAdvertisedButBroken: the server lists binary_tensor_data but
// refuses every request that uses it. The probe sees it absent; OIP-GEN-005
// fails with the probe's exchange as evidence, and the extension's specs,
// which run because it is listed, fail too.
func TestBinaryAdvertisedButBroken(t *testing.T) {
	b := breakage{name: "binary-advertised-not-served", rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
		if isInfer(r) && (r.Header.Get("Inference-Header-Content-Length") != "" || bytes.Contains(requestBody(r), []byte("binary_data"))) {
			jsonError(w, 400, `{"error":"binary tensor data is not supported"}`)
			return true
		}
		return false
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if run.exit != 3 {
		t.Errorf("exit %d, want 3", run.exit)
	}
	if e := extension(run.report, "binary_tensor_data"); !e.Advertised || e.Probe != report.ProbeAbsent || !e.Tested || e.Evidence == nil {
		t.Errorf("binary_tensor_data: %+v, want advertised, probe absent with evidence, tested", e)
	}
	failed := run.report.WithStatus(report.StatusFailed)
	// A check failing on the very answer (the same request, the same 400)
	// that fails another requirement is blocked by it: one defect.
	blocked := run.report.WithStatus(report.StatusBlocked)
	for _, id := range []string{"OIP-GEN-005", "OIP-EXT-BIN-002", "OIP-EXT-BIN-005", "OIP-EXT-BIN-009"} {
		if !slices.Contains(failed, id) && !slices.Contains(blocked, id) {
			t.Errorf("%s is neither failed nor blocked (failed: %v, blocked %v)", id, failed, blocked)
		}
	}
	q, _ := run.report.Requirement("OIP-GEN-005")
	if len(q.Findings) != 1 || !strings.Contains(q.Findings[0].Message, "binary_tensor_data is listed in server metadata but does not work") ||
		q.Findings[0].Evidence == nil || !strings.HasSuffix(q.Findings[0].Evidence.Request.Target, "/infer") {
		t.Errorf("OIP-GEN-005 findings %+v, want one naming the extension with the probe's exchange", q.Findings)
	}
	// Core inference is untouched.
	if slices.Contains(failed, "OIP-REST-INFER-001") {
		t.Error("OIP-REST-INFER-001 failed; only the extension is broken")
	}
	if !strings.Contains(run.output, "binary_tensor_data (advertised, ABSENT)") {
		t.Errorf("the summary does not show the broken promise:\n%s", lastLines(run.output, 40))
	}
}

// TestBinaryServedButNotAdvertised: the server serves binary_tensor_data
// and does not list it. The probe observes it, so its specs run (and
// pass); the one finding is that a supporting server must list it.
func TestBinaryServedButNotAdvertised(t *testing.T) {
	b := breakage{
		name: "binary-served-not-advertised",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) {
					exts, _ := m["extensions"].([]any)
					m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return e == string(specs.ExtBinaryTensorData) })
				})
			}
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if m, ok := resp.(*pb.ServerMetadataResponse); ok && m != nil {
				m.Extensions = slices.DeleteFunc(m.Extensions, func(e string) bool { return e == string(specs.ExtBinaryTensorData) })
			}
			return resp, err
		},
	}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if got := run.report.WithStatus(report.StatusFailed); !slices.Equal(got, []string{"OIP-EXT-BIN-001"}) {
		t.Errorf("failed %v, want [OIP-EXT-BIN-001]\n%s", got, failureLines(run.output))
	}
	if e := extension(run.report, "binary_tensor_data"); e.Advertised || e.Probe != report.ProbeObserved || !e.Tested {
		t.Errorf("binary_tensor_data: %+v, want not advertised, observed, tested", e)
	}
	for _, id := range []string{"OIP-EXT-BIN-002", "OIP-EXT-BIN-009"} {
		if q, _ := run.report.Requirement(id); q.Status != report.StatusPassed {
			t.Errorf("%s: %s, want passed (the specs of an observed extension run)", id, q.Status)
		}
	}
	q, _ := run.report.Requirement("OIP-EXT-BIN-001")
	if len(q.Findings) == 0 || !strings.Contains(q.Findings[0].Message, "the probe observed it") {
		t.Errorf("OIP-EXT-BIN-001 findings %+v, want one saying the probe observed the extension", q.Findings)
	}
	if run.report.FeatureSource != "discovered" || run.exit != 3 {
		t.Errorf("feature source %q, exit %d; want discovered, 3", run.report.FeatureSource, run.exit)
	}
}

// TestLenientPassesUnlessStrict: a server that quietly accepts a string
// shape dimension (a rule on clients, OIP-REST-INFER-010) is lenient: the
// run passes, the report, the text summary, the JUnit file and the step
// summary show it, and --strict fails it.
func TestLenientPassesUnlessStrict(t *testing.T) {
	b := breakage{name: "accepts-string-dimensions", rest: &restHook{in: func(r *http.Request) {
		if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
			return
		}
		var m map[string]any
		if json.Unmarshal(requestBody(r), &m) != nil {
			return
		}
		ins, _ := m["inputs"].([]any)
		changed := false
		for _, in := range ins {
			o, _ := in.(map[string]any)
			shape, _ := o["shape"].([]any)
			for i, d := range shape {
				if s, ok := d.(string); ok {
					shape[i], changed = json.Number(s), true
				}
			}
		}
		if changed {
			body, _ := json.Marshal(m)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	summary := filepath.Join(t.TempDir(), "summary.md")
	run := conformEnv(t, []string{"GITHUB_STEP_SUMMARY=" + summary}, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil || run.exit != 0 {
		t.Fatalf("exit %d, want 0 (lenient findings do not fail)\n%s", run.exit, lastLines(run.output, 30))
	}
	if got := run.report.WithStatus(report.StatusLenient); !slices.Equal(got, []string{"OIP-REST-INFER-010"}) {
		t.Errorf("lenient %v, want [OIP-REST-INFER-010]", got)
	}
	if got := run.report.WithStatus(report.StatusFailed); len(got) > 0 {
		t.Errorf("failed %v, want none", got)
	}
	if !strings.Contains(run.output, "LENIENT OIP-REST-INFER-010 [MUST]") {
		t.Errorf("the summary does not list the lenient finding:\n%s", lastLines(run.output, 30))
	}
	cases := readJUnit(t, filepath.Join(run.dir, "junit.xml"))
	if c := cases["OIP-REST-INFER-010"]; c.Failure != nil || !strings.Contains(c.SystemOut, "LENIENT") {
		t.Errorf("JUnit case of OIP-REST-INFER-010: %+v, want a pass whose output shows the lenient finding", c)
	}
	md, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(md), "1 lenient") || !strings.Contains(string(md), "OIP-REST-INFER-010") {
		t.Errorf("step summary (%v):\n%s", err, md)
	}

	strict := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--strict")
	if strict.exit != 3 || strict.report == nil {
		t.Fatalf("--strict: exit %d, want 3\n%s", strict.exit, lastLines(strict.output, 30))
	}
	if v := verdicts(strict.report)["OIP-REST-CORE"]; v != verdict.Failed {
		t.Errorf("--strict: OIP-REST-CORE %s, want fail", v)
	}
	if c := readJUnit(t, filepath.Join(strict.dir, "junit.xml"))["OIP-REST-INFER-010"]; c.Failure == nil || c.Failure.Type != "lenient" {
		t.Errorf("--strict: JUnit case of OIP-REST-INFER-010 %+v, want a failure of type lenient", c)
	}
}
