package selftest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/verdict"
)

// verdicts maps profile name → verdict.
func verdicts(r *report.ConformanceReport) map[string]verdict.Status {
	m := map[string]verdict.Status{}
	for _, p := range r.Profiles {
		m[p.Name] = p.Verdict
	}
	return m
}

// TestSelection: what is not targeted or not supported is "not-supported",
// never failed or skipped (OIP-GEN-002: a server may serve one protocol).
func TestSelection(t *testing.T) {
	srv := referencetest.Start(t)
	cases := []struct {
		name string
		args []string
		want map[string]verdict.Status
		// notSupported must all be not-supported.
		notSupported []string
	}{
		{"rest-only", []string{"--http", srv.HTTPURL()}, profileVerdicts(over(specs.TransportREST)),
			[]string{"OIP-GRPC-HEALTH-001", "OIP-GRPC-INFER-001", "OIP-GRPC-RAW-007", "OIP-GEN-007"}},
		{"grpc-only", []string{"--grpc", srv.GRPCAddr()}, profileVerdicts(over(specs.TransportGRPC)),
			[]string{"OIP-REST-HEALTH-001", "OIP-REST-INFER-001", "OIP-EXT-BIN-002", "OIP-REST-DATA-012"}},
		{"features-none", []string{"--http", srv.HTTPURL(), "--grpc", srv.GRPCAddr(), "--features", "none"}, profileVerdicts(core),
			[]string{"OIP-EXT-BIN-001", "OIP-EXT-BIN-009"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := conform(t, c.args...)
			if run.exit != 0 || run.report == nil {
				t.Fatalf("exit %d, want 0\n%s", run.exit, run.output)
			}
			for _, s := range []report.Status{report.StatusFailed, report.StatusSkipped} {
				if ids := run.report.WithStatus(s); len(ids) > 0 {
					t.Errorf("%s requirements %v, want none", s, ids)
				}
			}
			if got := verdicts(run.report); !mapsEqual(got, c.want) {
				t.Errorf("verdicts %v, want %v", got, c.want)
			}
			ns := run.report.WithStatus(report.StatusNotSupported)
			for _, id := range c.notSupported {
				if !slices.Contains(ns, id) {
					t.Errorf("%s is not not-supported", id)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]verdict.Status) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFeatureFlagCannotHideAbsentAdvertisement: --features turns specs on,
// but a server that does not advertise the extension still fails
// OIP-EXT-BIN-001 (a supporting server must report it).
func TestFeatureFlagCannotHideAbsentAdvertisement(t *testing.T) {
	b := breakage{name: "no-extensions", rest: &restHook{out: func(r *http.Request, a *answer) {
		if r.URL.Path == "/v2" {
			editJSON(a, func(m map[string]any) { m["extensions"] = []any{} })
		}
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--features", "binary_tensor_data")
	if run.report == nil {
		t.Fatalf("no report\n%s", run.output)
	}
	if got := run.report.WithStatus(report.StatusFailed); !slices.Equal(got, []string{"OIP-EXT-BIN-001"}) {
		t.Errorf("failed %v, want [OIP-EXT-BIN-001]\n%s", got, failureLines(run.output))
	}
	if run.report.FeatureSource != "flag" {
		t.Errorf("feature source %q, want flag", run.report.FeatureSource)
	}
}

// TestHeadersAndHostReachServer: --header and --host are sent with every
// REST request and as gRPC metadata / :authority.
func TestHeadersAndHostReachServer(t *testing.T) {
	const host = "oip.example.test"
	b := breakage{
		name: "needs-token",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("X-Selftest-Token") != "s3cret" || r.Host != host {
				jsonError(w, 401, `{"error":"missing token or wrong host `+r.Host+`"}`)
				return true
			}
			return false
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			if !slices.Contains(md.Get("x-selftest-token"), "s3cret") || !slices.Contains(md.Get(":authority"), host) {
				return nil, status.Errorf(codes.Unauthenticated, "missing token or wrong authority %v", md.Get(":authority"))
			}
			return h(ctx, req)
		},
	}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--header", "X-Selftest-Token: s3cret", "--host", host)
	if run.exit != 0 {
		t.Fatalf("exit %d, want 0\n%s", run.exit, lastLines(run.output, 30))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
