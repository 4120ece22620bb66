package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/reference/referencetest"
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
		{"no target", []string{"load", "--model", "add_sub"}, exitUsage},
		{"bad flag", []string{"load", "--no-such-flag"}, exitUsage},
		{"bad threshold", with(grpc, "--threshold", "p99<fast"), exitUsage},
		{"both loops", with(grpc, "--rate", "10", "--concurrency", "2"), exitUsage},
		{"unreachable", []string{"load", "--grpc", "127.0.0.1:1", "--model", "add_sub", "--ready-timeout", "300ms"}, exitNotRun},
		{"unknown model", []string{"load", "--http", srv.HTTPURL(), "--model", "nope", "--ready-timeout", "300ms"}, exitNotRun},
		{"pass", with(grpc, "--threshold", "p99<10s", "--output", out("a.json")), exitPass},
		{"pass again", with(grpc, "--protocol", "grpc", "--output", out("b.json"), "--csv", out("b.csv")), exitPass},
		{"threshold failed", with(grpc, "--threshold", "p50<1ns"), exitFailed},
		// Generator-bound wins over a failed threshold.
		{"generator-bound", with(grpc, "--rate", "200", "--lag-tolerance", "1ns", "--threshold", "p50<1ns"), exitInconclusive},
		{"report merge", []string{"report", out("a.json"), out("b.json"), "--output", out("m.json")}, exitPass},
		{"report threshold", []string{"report", "--threshold", "rps>1e12", out("a.json")}, exitFailed},
		{"report missing file", []string{"report", out("none.json")}, exitUsage},
		{"report compare", []string{"report", "--compare", out("a.json"), out("b.json")}, exitPass},
		{"report compare with a gate", []string{"report", "--compare", "--threshold", "p99<1s", out("a.json")}, exitUsage},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), c.args, &stdout, &stderr); got != c.code {
			t.Errorf("%s: oipkit %q: exit %d, want %d", c.name, c.args, got, c.code)
		}
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
