package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/verdict"
)

// TestMatrixCommand writes the compatibility document of two reports laid
// out as make interop lays them out, and checks the column names, the links
// to each runtime's documents and the catalog citation of a failure.
func TestMatrixCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(runtime, name string, status report.Status, readme bool) string {
		rs := []report.RequirementResult{{ID: "OIP-REST-INFER-006", Level: "MUST", Blocking: true, Status: status}}
		if status == report.StatusFailed {
			rs[0].Findings = []report.Finding{{Spec: "echoes a plain id", Class: report.ClassFail, Message: `id is "", want "42"`,
				Evidence: &report.Evidence{Request: report.Message{Method: "POST", Target: "/v2/models/add_sub/infer", Body: `{"id":"42"}`},
					Response: report.Message{Status: "HTTP 200", Body: `{"model_name":"add_sub"}`}}}}
		}
		r := &report.ConformanceReport{APIVersion: report.APIVersion, Kind: report.Kind,
			Implementation: report.Implementation{Name: name, Version: "1.0"}, Date: time.Now(),
			Requirements: rs, Counts: report.Count(rs)}
		d := filepath.Join(dir, "runtimes", runtime)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if readme {
			if err := os.WriteFile(filepath.Join(d, "README.md"), []byte("# triage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(d, "report.json")
		if err := report.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("pytriton", "triton", report.StatusFailed, true)
	b := write("mlserver", "mlserver", report.StatusPassed, false)
	out := filepath.Join(dir, "compatibility.md")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"matrix", "-o", out, a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| | pytriton: triton 1.0 | mlserver 1.0 |",
		"[triage](runtimes/pytriton/README.md#triage)",
		"| OIP-REST-INFER-006 (MUST) | [**fail**](#c1-oip-rest-infer-006) | pass |",
		"*Src:* OIP-REST §Inference Request JSON Object", // from specs/requirements.yaml
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("compatibility.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(string(doc), "runtimes/mlserver/README.md") {
		t.Error("links a README that does not exist")
	}
	if code := run(context.Background(), []string{"matrix"}, &stdout, &stderr); code != verdict.ExitUsage {
		t.Errorf("matrix without reports: exit %d, want %d", code, verdict.ExitUsage)
	}
}
