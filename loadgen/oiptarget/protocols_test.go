package oiptarget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// TestProtocols runs a short closed loop with validation over every
// protocol against the reference server's add_sub.
func TestProtocols(t *testing.T) {
	srv := referencetest.Start(t)
	for _, p := range client.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := loadgen.Config{
				Target: loadgen.TargetConfig{Protocol: p, Model: "add_sub"},
				Inputs: loadgen.InputConfig{Validate: true, Shapes: []string{"INPUT0:2,16", "INPUT1:2,16"}},
				Load: loadgen.LoadConfig{Concurrency: 2, Duration: loadgen.Duration(300 * time.Millisecond),
					WarmupRequests: 10, Interval: loadgen.Duration(100 * time.Millisecond)},
			}
			if p.IsGRPC() {
				cfg.Target.GRPC = srv.GRPCAddr()
			} else {
				cfg.Target.HTTP = srv.HTTPURL()
			}
			res := run(t, cfg)
			if res.Counts.OK == 0 || res.Counts.Errors+res.Counts.Timeouts != 0 {
				t.Fatalf("counts %+v, errors %v", res.Counts, res.Errors)
			}
			if got := res.Histograms.Response.Count(); got != res.Counts.OK {
				t.Errorf("response histogram holds %d values, want %d", got, res.Counts.OK)
			}
			if res.Warmup.Requests != 10 {
				t.Errorf("warm-up requests %d, want 10", res.Warmup.Requests)
			}
		})
	}
}

// run makes the target for cfg and runs it.
func run(t *testing.T, cfg loadgen.Config) *loadgen.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := oiptarget.NewTarget(ctx, cfg)
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	defer tg.Close()
	res, err := loadgen.Run(ctx, tg, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestUnknownModelFailsFast: a ready server that answers NOT_FOUND / 404
// for the model ends the run at once, not after the readiness timeout.
func TestUnknownModelFailsFast(t *testing.T) {
	srv := referencetest.Start(t)
	for _, p := range []client.Protocol{client.ProtocolHTTP, client.ProtocolGRPC} {
		t.Run(string(p), func(t *testing.T) {
			cfg := loadgen.Config{
				Target: loadgen.TargetConfig{Protocol: p, Model: "does_not_exist", ReadyTimeout: loadgen.Duration(time.Minute)},
				Load:   loadgen.LoadConfig{Concurrency: 1, Duration: loadgen.Duration(100 * time.Millisecond)},
			}
			if p.IsGRPC() {
				cfg.Target.GRPC = srv.GRPCAddr()
			} else {
				cfg.Target.HTTP = srv.HTTPURL()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tg, err := oiptarget.NewTarget(ctx, cfg)
			if err == nil {
				tg.Close()
			}
			if !errors.Is(err, oiptarget.ErrNotReady) || ctx.Err() != nil {
				t.Fatalf("NewTarget for an unknown model: %v (ctx %v), want ErrNotReady before the deadline", err, ctx.Err())
			}
		})
	}
}
