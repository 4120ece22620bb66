package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// TestLoadAndReportExitCodes checks the documented exit statuses of load
// and report, and their precedence, against a reference server.
func TestLoadAndReportExitCodes(t *testing.T) {
	srv := referencetest.Start(t)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	grpc := []string{"load", "--grpc", srv.GRPCAddr(), "--model", "add_sub", "--duration", "300ms", "--progress", "never"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }

	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"no target", []string{"load", "--model", "add_sub"}, verdict.ExitUsage},
		{"duration 0", with(grpc, "--duration", "0"), verdict.ExitUsage},
		{"negative duration", with(grpc, "--duration", "-5s"), verdict.ExitUsage},
		{"interval 0", with(grpc, "--interval", "0"), verdict.ExitUsage},
		{"concurrency 0", with(grpc, "--concurrency", "0"), verdict.ExitUsage},
		{"output folder missing", with(grpc, "--output", filepath.Join(dir, "no", "such", "r.json")), verdict.ExitUsage},
		{"html into a folder", with(grpc, "--html", dir), verdict.ExitUsage},
		{"shape of no input", with(grpc, "--shape", "NOPE:1"), verdict.ExitUsage},
		{"bad range", with(grpc, "--concurrency-range", "8:1"), verdict.ExitUsage},
		{"sweep and concurrency", with(grpc, "--concurrency-range", "1:2", "--concurrency", "2"), verdict.ExitUsage},
		{"stability with duration", with(grpc, "--stability", "5%"), verdict.ExitUsage},
		{"bad max error rate", with(grpc, "--max-error-rate", "150%"), verdict.ExitUsage},
		{"bad format", with(grpc, "--format", "xml"), verdict.ExitUsage},
		{"http at the gRPC port", []string{"load", "--http", srv.GRPCAddr(), "--model", "add_sub"}, verdict.ExitNotRun},
		{"grpc at the REST port", []string{"load", "--grpc", strings.TrimPrefix(srv.HTTPURL(), "http://"), "--model", "add_sub"}, verdict.ExitNotRun},
		{"http without a scheme", []string{"load", "--http", strings.TrimPrefix(srv.HTTPURL(), "http://"), "--model", "add_sub", "--duration", "200ms", "--progress", "never"}, verdict.ExitPass},
		{"every request times out", []string{"load", "--grpc", srv.GRPCAddr(), "--model", "delay", "--timeout", "2ms", "--duration", "300ms", "--output", out("timeouts.json")}, verdict.ExitFailed},
		{"timeouts allowed", []string{"load", "--grpc", srv.GRPCAddr(), "--model", "delay", "--timeout", "2ms", "--duration", "300ms", "--max-error-rate", "100%"}, verdict.ExitPass},
		{"sweep", with(grpc, "--concurrency-range", "1:2", "--output", out("sweep.json"), "--summary-csv", out("sweep.csv")), verdict.ExitPass},
		{"k6 threshold", with(grpc, "--threshold", "p(95)<10000"), verdict.ExitPass},
		{"-n", with(grpc, "-n", "20", "--output", out("n.json")), verdict.ExitPass},
		{"bad flag", []string{"load", "--no-such-flag"}, verdict.ExitUsage},
		{"bad threshold", with(grpc, "--threshold", "p99<fast"), verdict.ExitUsage},
		{"both loops", with(grpc, "--rate", "10", "--concurrency", "2"), verdict.ExitUsage},
		{"unreachable", []string{"load", "--grpc", "127.0.0.1:1", "--model", "add_sub", "--ready-timeout", "300ms"}, verdict.ExitNotRun},
		{"unknown model", []string{"load", "--http", srv.HTTPURL(), "--model", "nope", "--ready-timeout", "300ms"}, verdict.ExitNotRun},
		{"pass", with(grpc, "--threshold", "p99<10s", "--output", out("a.json")), verdict.ExitPass},
		{"pass again", with(grpc, "--output", out("b.json"), "--csv", out("b.csv")), verdict.ExitPass},
		{"other protocol", with(grpc, "--protocol", "grpc", "--output", out("c.json")), verdict.ExitPass},
		{"threshold failed", with(grpc, "--threshold", "p50<1ns"), verdict.ExitFailed},
		// Generator-bound wins over a failed threshold.
		{"generator-bound", with(grpc, "--rate", "200", "--lag-tolerance", "1ns", "--threshold", "p50<1ns"), verdict.ExitInconclusive},
		{"report merge", []string{"report", out("a.json"), out("b.json"), "--output", out("m.json")}, verdict.ExitPass},
		{"report threshold", []string{"report", "--threshold", "rps>1e12", out("a.json")}, verdict.ExitFailed},
		{"report missing file", []string{"report", out("none.json")}, verdict.ExitUsage},
		{"report compare", []string{"report", "--compare", out("a.json"), out("b.json")}, verdict.ExitPass},
		{"report compare with a gate", []string{"report", "--compare", "--threshold", "p99<1s", out("a.json")}, verdict.ExitUsage},
		{"report refuses a mixed merge", []string{"report", out("a.json"), out("c.json")}, verdict.ExitUsage},
		{"report refuses a sweep in a merge", []string{"report", out("a.json"), out("b.json"), out("sweep.json")}, verdict.ExitUsage},
		{"report forces a mixed merge", []string{"report", "--force", out("a.json"), out("sweep.json")}, verdict.ExitPass},
		{"report keeps the timeouts' verdict", []string{"report", out("timeouts.json")}, verdict.ExitFailed},
		{"report lifts the bound", []string{"report", "--max-error-rate", "100%", out("timeouts.json")}, verdict.ExitPass},
		{"report html overlay", []string{"report", "--html", out("cmp.html"), out("a.json"), out("sweep.json")}, verdict.ExitPass},
		{"report html overlay with a gate", []string{"report", "--html", out("cmp.html"), "--threshold", "p99<1s", out("a.json"), out("b.json")}, verdict.ExitUsage},
		{"report html to a missing folder", []string{"report", "--html", filepath.Join(dir, "no", "x.html"), out("a.json")}, verdict.ExitUsage},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), c.args, &stdout, &stderr); got != c.code {
			t.Errorf("%s: oipkit %q: exit %d, want %d", c.name, c.args, got, c.code)
		}
	}

	for _, p := range []string{"cmp.html", "sweep.csv"} {
		if _, err := os.Stat(out(p)); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("a failed write check left a folder behind")
	}
	to := readResult(t, out("timeouts.json"))
	if to.Counts.Timeouts == 0 || len(to.ErrorSamples["timeout"]) == 0 {
		t.Errorf("the timed-out run keeps no counts or sample: %+v %v", to.Counts, to.ErrorSamples)
	}
	if sw := readResult(t, out("sweep.json")); len(sw.Steps) != 2 {
		t.Errorf("the sweep has %d levels, want 2", len(sw.Steps))
	}
	if n := readResult(t, out("n.json")); n.Counts.Sent != 20 {
		t.Errorf("-n 20 sent %d", n.Counts.Sent)
	}

	f, err := os.Open(out("m.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := loadgen.ReadResult(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sources) != 2 || m.Histograms.Response.Count() != m.Counts.OK || m.Counts.OK == 0 {
		t.Errorf("merged result: sources %v, %d values for %d ok requests", m.Sources, m.Histograms.Response.Count(), m.Counts.OK)
	}
}

func readResult(t *testing.T, path string) *loadgen.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := loadgen.ReadResult(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLoadStreaming runs --streaming and --sequence-length end to end and
// checks their usage errors are one line each (exit 1).
func TestLoadStreaming(t *testing.T) {
	srv := referencetest.Start(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"data":[{"INPUT0":[4]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	grpc := []string{"load", "--grpc", srv.GRPCAddr(), "--model", "tokens", "--input-data", tokens, "--param", "interval_ms=1",
		"-n", "8", "--progress", "never"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"grpc stream", with(grpc, "--streaming", "--output", filepath.Join(dir, "s.json")), verdict.ExitPass},
		{"sse stream", []string{"load", "--http", srv.HTTPURL(), "--model", "text_gen", "--streaming", "--text-input", "a b c", "-n", "5", "--progress", "never"}, verdict.ExitPass},
		{"sequences", []string{"load", "--grpc", srv.GRPCAddr(), "--model", "accumulate", "--input-data", tokens, "--sequence-length", "3", "--concurrency", "2", "-n", "12", "--progress", "never"}, verdict.ExitPass},
		{"stream-responses without streaming", with(grpc, "--stream-responses", "2"), verdict.ExitUsage},
		{"text-input over grpc", with(grpc, "--streaming", "--text-input", "x"), verdict.ExitUsage},
		{"negative stream-responses", with(grpc, "--streaming", "--stream-responses", "-1"), verdict.ExitUsage},
		{"sequence length 0", with(grpc, "--sequence-length", "0"), verdict.ExitUsage},
		{"sequences without a length", with(grpc, "--num-of-sequences", "2"), verdict.ExitUsage},
		{"num-of-sequences in a closed loop", with(grpc, "--sequence-length", "2", "--num-of-sequences", "2"), verdict.ExitUsage},
	} {
		var stdout, stderr bytes.Buffer
		got := run(context.Background(), c.args, &stdout, &stderr)
		if got != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", c.name, got, c.code, stderr.String())
		}
		if c.code == verdict.ExitUsage && strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%s: want a one-line error, got %q", c.name, stderr.String())
		}
	}
	f, err := os.Open(filepath.Join(dir, "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := loadgen.ReadResult(f)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Responses != 32 || res.Histograms.FirstResponse == nil || res.Histograms.FirstResponse.Count() != 8 {
		t.Errorf("result: %d responses, first-response histogram %v", res.Counts.Responses, res.Histograms.FirstResponse)
	}
}

// TestLoadServerStopsAnswering: a server shut down in the middle of a run
// refuses every request after that; the run could not complete (exit 2),
// says when the server stopped answering, and keeps its result file with
// the error counts. A server that answers badly instead is a failed
// verdict (exit 3, above).
func TestLoadServerStopsAnswering(t *testing.T) {
	for _, transport := range []string{"--http", "--grpc"} {
		t.Run(transport, func(t *testing.T) {
			srv := referencetest.Start(t)
			addr := srv.GRPCAddr()
			if transport == "--http" {
				addr = srv.HTTPURL()
			}
			out := filepath.Join(t.TempDir(), "r.json")
			stop := time.AfterFunc(700*time.Millisecond, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(ctx)
			})
			defer stop.Stop()
			var stdout, stderr bytes.Buffer
			args := []string{"load", transport, addr, "--model", "add_sub", "--rate", "200", "--duration", "2s", "--progress", "never", "--output", out}
			if got := run(context.Background(), args, &stdout, &stderr); got != verdict.ExitNotRun {
				t.Fatalf("exit %d, want %d\n%s\n%s", got, verdict.ExitNotRun, stderr.String(), stdout.String())
			}
			r := readResult(t, out)
			if !strings.Contains(r.Error, "stopped answering") || !strings.Contains(r.Error, "s into the measurement") || strings.Contains(r.Error, "\n") {
				t.Errorf("error %q: want one line saying when the server stopped answering", r.Error)
			}
			if r.EndReason != loadgen.EndError || r.Counts.Errors == 0 || len(r.Errors) == 0 || len(r.ErrorSamples) == 0 {
				t.Errorf("result: end %s, counts %+v, errors %v, samples %v: want the failures kept", r.EndReason, r.Counts, r.Errors, r.ErrorSamples)
			}
		})
	}
}
