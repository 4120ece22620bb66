package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// TestLoadAnswerCaps: oipkit load's caps on what a server sends are flags
// (named as serve's limits); an answer beyond one fails its request with an
// error naming the flag, and within the caps the same run passes.
func TestLoadAnswerCaps(t *testing.T) {
	srv := referencetest.Start(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		target []string
		limit  []string
		flag   string
	}{
		{"rest-body", []string{"--http", srv.HTTPURL(), "--protocol", "http"}, []string{"--max-body-bytes", "4096"}, "--max-body-bytes"},
		{"grpc-message", []string{"--grpc", srv.GRPCAddr(), "--protocol", "grpc-raw"}, []string{"--grpc-max-message-bytes", "4096"}, "--grpc-max-message-bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// identity_fp32 with 4,096 elements: its answer is 16 KiB raw.
			base := append(append([]string{"load"}, c.target...), "--model", "identity_fp32", "--shape", "INPUT0:1,4096",
				"--concurrency", "2", "--duration", "300ms", "--progress", "never")
			out := filepath.Join(dir, c.name+".json")
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append(append(base, c.limit...), "--output", out), &stdout, &stderr); code != verdict.ExitFailed {
				t.Fatalf("%s: exit %d, want %d: %s", c.limit, code, verdict.ExitFailed, stderr.String())
			}
			r := readResult(t, out)
			if r.Counts.OK != 0 || !strings.Contains(fmt.Sprint(r.ErrorSamples), c.flag) {
				t.Errorf("%s: %d OK, errors %v: want every request failed, naming %s", c.limit, r.Counts.OK, r.ErrorSamples, c.flag)
			}
			stdout.Reset()
			stderr.Reset()
			if code := run(context.Background(), base, &stdout, &stderr); code != verdict.ExitPass {
				t.Errorf("default caps: exit %d: %s", code, stderr.String())
			}
		})
	}
}
