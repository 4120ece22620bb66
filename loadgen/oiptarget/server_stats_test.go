package oiptarget_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/render"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// The server-side breakdown of a run against the reference's delay fixture
// (statistics extension): compute infer per request is at least the
// requested delay (a sleep is never shorter) and at most the slowest
// service time the client saw (no request is computed for longer than it
// was waited for), over REST and gRPC, and the text and JSON outputs carry
// it. How close it lands to the delay is a figure of a quiet machine, not
// of a unit test (make load-reports, README).
func TestServerBreakdown(t *testing.T) {
	srv := referencetest.Start(t)
	const delay = 50 * time.Millisecond
	for _, p := range []client.Protocol{client.ProtocolHTTP, client.ProtocolGRPC} {
		t.Run(string(p), func(t *testing.T) {
			cfg := loadgen.Config{
				Target: loadgen.TargetConfig{Protocol: p, Model: "delay"},
				Inputs: loadgen.InputConfig{Parameters: []string{"delay_ms=50"}, Shapes: []string{"INPUT0:4"}},
				Load: loadgen.LoadConfig{Concurrency: 2, Duration: loadgen.Duration(600 * time.Millisecond),
					WarmupRequests: 2, Interval: loadgen.Duration(200 * time.Millisecond)},
			}
			if p.IsGRPC() {
				cfg.Target.GRPC = srv.GRPCAddr()
			} else {
				cfg.Target.HTTP = srv.HTTPURL()
			}
			res := run(t, cfg)
			sv := res.Server
			if sv == nil {
				t.Fatal("no server-side breakdown from a server with the statistics extension")
			}
			// The statistics count the window's requests, also those
			// answered after dispatching stopped.
			if sv.Requests < res.Counts.OK-2 || sv.Requests > res.Counts.OK+4 || sv.Source != "statistics extension" {
				t.Errorf("breakdown %+v for %d client requests", sv, res.Counts.OK)
			}
			var infer time.Duration
			for _, c := range sv.Components {
				if c.Name == "compute_infer" {
					infer = c.Mean()
				}
			}
			t.Logf("%s: %d requests, compute_infer %v per request (delay %v)", p, sv.Requests, infer, delay)
			if slowest := time.Duration(res.Latency.Service.Max); infer < delay || infer > slowest {
				t.Errorf("compute_infer per request %v, want between the %v delay and the slowest service time %v", infer, delay, slowest)
			}
			var text, js bytes.Buffer
			if err := render.NewTextReporter(res)(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "server-side breakdown (statistics extension") || !strings.Contains(text.String(), "compute_infer") {
				t.Errorf("text output lacks the breakdown:\n%s", text.String())
			}
			if err := render.NewJSONReporter(res)(&js); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(js.String(), `"source": "statistics extension"`) {
				t.Errorf("JSON result lacks the breakdown")
			}
		})
	}
}

// A target without statistics gets no breakdown.
func TestNoServerBreakdownWithoutStatistics(t *testing.T) {
	cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: "127.0.0.1:1", Model: "m"}, Load: loadgen.LoadConfig{Concurrency: 1, Duration: loadgen.Duration(50 * time.Millisecond)}}
	res, err := loadgen.Run(context.Background(), doFunc(func(context.Context, uint64) error { return nil }), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Server != nil {
		t.Errorf("breakdown %+v from a target without statistics", res.Server)
	}
}

type doFunc func(context.Context, uint64) error

func (f doFunc) Do(ctx context.Context, seq uint64) error { return f(ctx, seq) }
