package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/internal/tlstest"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// envHelper makes the test binary run oipkit itself (TestHelperOipkit):
// conform runs its suite once per process, load and conform print their
// errors on the process's stderr, and serve stops at a real SIGTERM.
const envHelper = "OIPKIT_TEST_HELPER"

func TestHelperOipkit(t *testing.T) {
	if os.Getenv(envHelper) != "1" {
		t.Skip("runs oipkit for other tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	ctx, stop := signalContext() // as main
	code := run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// oipkitRun is one finished oipkit process.
type oipkitRun struct {
	code           int
	stdout, stderr string
}

func runOipkit(t *testing.T, args ...string) oipkitRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperOipkit$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), envHelper+"=1")
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := oipkitRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run oipkit %q: %v", args, err)
	}
	return r
}

// expect checks the exit status and, for failures, that stderr is one line
// holding every fragment.
func (r oipkitRun) expect(t *testing.T, what string, code int, fragments ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", what, r.code, code, tail(r.stdout), r.stderr)
		return
	}
	if len(fragments) == 0 {
		return
	}
	msg := strings.TrimSpace(r.stderr)
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: want a one-line error, got:\n%s", what, msg)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("%s: error %q does not mention %q", what, msg, f)
		}
	}
	t.Logf("%s: %s", what, msg)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// tlsServer starts the reference server with the PEM files as oipkit
// serve loads them: mutual TLS when clientCA is set.
func tlsServer(t *testing.T, pki *tlstest.PKI, clientCA string) *reference.Server {
	t.Helper()
	cfg, err := reference.LoadTLS(pki.ServerCert, pki.ServerKey, clientCA)
	if err != nil {
		t.Fatal(err)
	}
	return referencetest.Start(t, func(c *reference.Config) { c.TLS = cfg })
}

// TestConformOverTLS runs the whole suite against the reference server over
// HTTPS and gRPC-TLS, and over mutual TLS, and checks the one-line errors
// of the usual mistakes.
func TestConformOverTLS(t *testing.T) {
	pki := tlstest.New(t)
	tlsSrv := tlsServer(t, pki, "")
	mtlsSrv := tlsServer(t, pki, pki.CA)
	targets := func(s *reference.Server) []string {
		return []string{"conform", "--report-dir", "", "--http", s.HTTPURL(), "--grpc", s.GRPCAddr()}
	}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }

	runOipkit(t, with(targets(tlsSrv), "--ca", pki.CA)...).expect(t, "TLS with --ca", verdict.ExitPass)
	runOipkit(t, with(targets(tlsSrv), "--insecure-skip-verify")...).expect(t, "TLS with --insecure-skip-verify", verdict.ExitPass)
	r := runOipkit(t, with(targets(mtlsSrv), "--ca", pki.CA, "--cert", pki.ClientCert, "--key", pki.ClientKey)...)
	r.expect(t, "mutual TLS", verdict.ExitPass)
	// The summary lists the passed profiles on one (wrapped) line.
	passed := regexp.MustCompile(`  PASS: [^\n]*(\n {10}[^\n]*)*`).FindString(r.stdout)
	if !strings.Contains(passed, "OIP-GRPC-CORE") || !strings.Contains(passed, "OIP-REST-CORE") {
		t.Errorf("mutual TLS: both transports should pass:\n%s", tail(r.stdout))
	}

	// Failures: one line, exit 2 (could not run), naming the cause.
	runOipkit(t, with(targets(tlsSrv), "--ca", pki.OtherCA)...).expect(t, "wrong CA", verdict.ExitNotRun, "TLS failed", "--ca", "unknown authority")
	runOipkit(t, "conform", "--report-dir", "", "--grpc", tlsSrv.GRPCAddr(), "--ca", pki.OtherCA).
		expect(t, "wrong CA, gRPC", verdict.ExitNotRun, "TLS failed", "--ca", "unknown authority")
	runOipkit(t, with(targets(mtlsSrv), "--ca", pki.CA)...).expect(t, "no client certificate", verdict.ExitNotRun, "TLS failed", "--cert and --key", "certificate required")
	runOipkit(t, "conform", "--report-dir", "", "--grpc", mtlsSrv.GRPCAddr(), "--ca", pki.CA).
		expect(t, "no client certificate, gRPC", verdict.ExitNotRun, "TLS failed", "--cert and --key", "certificate required")
	runOipkit(t, with(targets(mtlsSrv), "--ca", pki.CA, "--cert", pki.UntrustedClientCert, "--key", pki.UntrustedClientKey)...).
		expect(t, "untrusted client certificate", verdict.ExitNotRun, "TLS failed", "not signed by one")

	// Usage errors: nothing is sent.
	runOipkit(t, "conform", "--report-dir", "", "--http", strings.Replace(tlsSrv.HTTPURL(), "https", "http", 1), "--ca", pki.CA).
		expect(t, "TLS flags with http://", verdict.ExitUsage, "https://")
	runOipkit(t, with(targets(mtlsSrv), "--cert", pki.ClientCert)...).expect(t, "--cert without --key", verdict.ExitUsage, "without its key")
	runOipkit(t, with(targets(tlsSrv), "--ca", pki.ClientKey)...).expect(t, "a CA file without a certificate", verdict.ExitUsage, "no PEM certificate")
}

// TestLoadOverTLS sends load over HTTPS and gRPC-TLS, with and without
// client certificates, and checks that a TLS mistake ends the run at once
// (not after the readiness timeout) with a one-line error.
func TestLoadOverTLS(t *testing.T) {
	pki := tlstest.New(t)
	tlsSrv := tlsServer(t, pki, "")
	mtlsSrv := tlsServer(t, pki, pki.CA)
	load := func(target string, more ...string) []string {
		flag := "--grpc"
		if strings.HasPrefix(target, "http") {
			flag = "--http"
		}
		return append([]string{"load", flag, target, "--model", "add_sub", "--duration", "300ms", "--progress", "never",
			"--validate", "--threshold", "error_rate<=0"}, more...)
	}
	clientCert := []string{"--ca", pki.CA, "--cert", pki.ClientCert, "--key", pki.ClientKey}

	runOipkit(t, load(tlsSrv.HTTPURL(), "--ca", pki.CA)...).expect(t, "HTTPS with --ca", verdict.ExitPass)
	runOipkit(t, load(tlsSrv.GRPCAddr(), "--ca", pki.CA)...).expect(t, "gRPC-TLS with --ca", verdict.ExitPass)
	runOipkit(t, load(tlsSrv.GRPCAddr(), "--insecure-skip-verify", "--protocol", "grpc")...).expect(t, "gRPC-TLS with --insecure-skip-verify", verdict.ExitPass)
	runOipkit(t, load(tlsSrv.HTTPURL(), "--insecure-skip-verify", "--protocol", "http-binary")...).expect(t, "HTTPS with --insecure-skip-verify", verdict.ExitPass)
	runOipkit(t, load(mtlsSrv.HTTPURL(), clientCert...)...).expect(t, "HTTPS, mutual TLS", verdict.ExitPass)
	runOipkit(t, load(mtlsSrv.GRPCAddr(), clientCert...)...).expect(t, "gRPC-TLS, mutual TLS", verdict.ExitPass)
	// Reached by address, verified by a name the certificate lists.
	runOipkit(t, load(mtlsSrv.GRPCAddr(), append(clientCert, "--tls-server-name", tlstest.ServerName)...)...).
		expect(t, "gRPC-TLS with --tls-server-name", verdict.ExitPass)

	// Failures end at once: the readiness wait is for servers still
	// starting, and a refused certificate stays refused. "TLS failed" is
	// that early exit; a timed-out wait says "not ready after".
	for _, c := range []struct {
		what      string
		args      []string
		fragments []string
	}{
		{"HTTPS, wrong CA", load(tlsSrv.HTTPURL(), "--ca", pki.OtherCA), []string{"TLS failed", "--ca", "unknown authority"}},
		{"gRPC-TLS, wrong CA", load(tlsSrv.GRPCAddr(), "--ca", pki.OtherCA), []string{"TLS failed", "--ca", "unknown authority"}},
		{"HTTPS, no client certificate", load(mtlsSrv.HTTPURL(), "--ca", pki.CA), []string{"TLS failed", "--cert and --key", "certificate required"}},
		{"gRPC-TLS, no client certificate", load(mtlsSrv.GRPCAddr(), "--ca", pki.CA), []string{"TLS failed", "--cert and --key", "certificate required"}},
		{"gRPC-TLS, untrusted client certificate", load(mtlsSrv.GRPCAddr(), "--ca", pki.CA, "--cert", pki.UntrustedClientCert, "--key", pki.UntrustedClientKey),
			[]string{"TLS failed", "not signed by one"}},
		{"gRPC-TLS, another name", load(tlsSrv.GRPCAddr(), "--ca", pki.CA, "--tls-server-name", "elsewhere.example"), []string{"TLS failed", "--tls-server-name"}},
	} {
		start := time.Now()
		r := runOipkit(t, append(c.args, "--format", "json")...)
		r.expect(t, c.what, verdict.ExitNotRun, c.fragments...)
		if strings.Contains(r.stderr, "not ready after") {
			t.Errorf("%s: waited out the readiness timeout (%s)", c.what, time.Since(start).Round(time.Millisecond))
		}
	}
	runOipkit(t, load(strings.Replace(tlsSrv.HTTPURL(), "https", "http", 1), "--ca", pki.CA)...).
		expect(t, "TLS flags with http://", verdict.ExitUsage, "https://")
	runOipkit(t, load(tlsSrv.GRPCAddr(), "--key", pki.ClientKey)...).expect(t, "--key without --cert", verdict.ExitUsage, "without its certificate")
}

func TestServeTLSFlags(t *testing.T) {
	pki := tlstest.New(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--tls-cert", pki.ServerCert}, verdict.ExitUsage},
		{[]string{"serve", "--tls-client-ca", pki.CA}, verdict.ExitUsage},
		{[]string{"serve", "--tls-cert", pki.ServerCert, "--tls-key", pki.ClientKey}, verdict.ExitUsage},
		{[]string{"serve", "--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey, "--tls-client-ca", pki.ServerKey}, verdict.ExitUsage},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), c.args, &stdout, &stderr); got != c.code {
			t.Errorf("oipkit %q: exit %d, want %d (stderr %q)", c.args, got, c.code, stderr.String())
		}
	}

	// A good configuration serves until cancelled.
	code, stderr := serveWhile(t, []string{"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--log-level", "error",
		"--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey, "--tls-client-ca", pki.CA}, func() { time.Sleep(100 * time.Millisecond) })
	if code != 0 {
		t.Fatalf("serve with TLS exited %d: %s", code, stderr)
	}
}
