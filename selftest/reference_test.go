package selftest

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// TestReferenceConforms: the reference server passes every profile over
// REST and gRPC, with no failures and no skips.
func TestReferenceConforms(t *testing.T) {
	srv := referencetest.Start(t)
	run := conform(t, "--http", srv.HTTPURL(), "--grpc", srv.GRPCAddr())
	if run.exit != 0 || run.report == nil {
		t.Fatalf("oipkit conform exit %d, want 0\n%s", run.exit, run.output)
	}
	for _, p := range run.report.Profiles {
		if p.Verdict != verdict.Pass {
			t.Errorf("profile %s: %s (%s), want pass", p.Name, p.Verdict, p.Summary)
		}
	}
	for _, s := range []report.Status{report.StatusFailed, report.StatusSkipped} {
		if ids := run.report.WithStatus(s); len(ids) > 0 {
			t.Errorf("%s requirements: %v\n%s", s, ids, run.output)
		}
	}
	if ids := run.report.WithStatus(report.StatusWarning); len(ids) > 0 {
		t.Logf("warnings against the reference server: %v", ids)
	}
	t.Logf("reference server: %v in %v", run.report.Counts, run.elapsed)
	// JUnit: one test case per graded requirement, every one passing.
	cases := readJUnit(t, filepath.Join(run.dir, "junit.xml"))
	graded := 0
	for _, q := range run.report.Requirements {
		if q.Status != report.StatusNotSupported && q.Status != report.StatusNotCovered {
			graded++
			if c, ok := cases[q.ID]; !ok || c.Failure != nil || c.Skipped != nil {
				t.Errorf("JUnit case of %s: %+v, want a pass", q.ID, c)
			}
		}
	}
	if len(cases) != graded {
		t.Errorf("JUnit has %d test cases, want one per graded requirement (%d)", len(cases), graded)
	}
	for _, e := range run.report.Extensions {
		if (e.Name == "binary_tensor_data" || e.Name == "model_configuration") && (!e.Advertised || e.Probe != report.ProbeObserved) {
			t.Errorf("extension %s: advertised %v, probe %s; want advertised and observed", e.Name, e.Advertised, e.Probe)
		}
	}
}

// TestReferenceConformsStrict: the reference server has no warnings either.
func TestReferenceConformsStrict(t *testing.T) {
	srv := referencetest.Start(t)
	run := conform(t, "--http", srv.HTTPURL(), "--grpc", srv.GRPCAddr(), "--strict")
	if run.exit != 0 {
		t.Fatalf("oipkit conform --strict exit %d, want 0\n%s", run.exit, run.output)
	}
}

// TestBundledReference: with no target, conform tests its own reference
// server.
func TestBundledReference(t *testing.T) {
	run := conform(t)
	if run.exit != 0 {
		t.Fatalf("oipkit conform (bundled) exit %d, want 0\n%s", run.exit, run.output)
	}
	if !strings.Contains(run.output, "bundled reference server") {
		t.Errorf("output does not say it tests the bundled reference server:\n%s", run.output)
	}
}

// TestUnreachable: a target where nothing listens ends within seconds with
// a clear error and exit status 2.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here now
	for _, args := range [][]string{{"--http", "http://" + addr}, {"--grpc", addr}} {
		run := conform(t, args...)
		if run.exit != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, run.exit, run.output)
		}
		if run.elapsed > 10*time.Second {
			t.Errorf("%v: took %v, want a few seconds", args, run.elapsed)
		}
		if !strings.Contains(run.output, "unreachable") || !strings.Contains(run.output, addr) {
			t.Errorf("%v: output does not name the unreachable target:\n%s", args, run.output)
		}
	}
}
