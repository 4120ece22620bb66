package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/oipkit/oipkit/reference/referencetest"
)

// noopTarget answers at once: with it, a benchmark measures only the
// generator's own work.
type noopTarget struct{}

func (noopTarget) Do(context.Context, uint64) error { return nil }

func benchRunner(tb testing.TB, t Target, load LoadConfig) *runner {
	cfg := Config{Target: TargetConfig{GRPC: "127.0.0.1:1", Model: "m"}, Load: load}
	if err := cfg.Normalize(); err != nil {
		tb.Fatal(err)
	}
	r := &runner{target: t, cfg: cfg, base: time.Now()}
	if cfg.OpenLoop() {
		p, _ := ParseRate(cfg.Load.Rate)
		r.profile = &p
	}
	r.shards = newShards(shardCount(r.workers()), false)
	r.resetStop()
	return r
}

// BenchmarkGRPCRawHotPath measures the steady-state request path of a
// gRPC raw run in parts, each per request:
//
//   - generator/open-loop: the dispatcher walking the schedule, the hand-off
//     to a worker, the clock reads and the recording, with a no-op executor
//     (rate 10^6/s: the dispatcher only yields between slots);
//   - generator/closed-loop: a worker's loop (clock, in-flight gauge,
//     record) with a no-op executor;
//   - target-do: OIPTarget.Do alone, i.e. sending the pre-encoded request
//     through grpc-go to an in-process reference server and dropping the
//     reply unread;
//   - full: the worker path with the real target (generator + target-do).
//
// The generator's own code allocates nothing per request (0 allocs/op in the
// two generator cases); what target-do and full allocate is grpc-go's call
// machinery (stream, headers, HTTP/2 frames) and the per-request timeout
// context, not serialization: no protobuf message is built or marshalled.
func BenchmarkGRPCRawHotPath(b *testing.B) {
	b.Run("generator/open-loop", func(b *testing.B) {
		r := benchRunner(b, noopTarget{}, LoadConfig{Rate: "1000000", MaxInFlight: 64})
		b.ReportAllocs()
		b.ResetTimer()
		r.openLoop(context.Background(), r.now(), time.Hour, uint64(b.N))
		b.StopTimer()
		b.ReportMetric(float64(r.dropped.Load())/float64(b.N), "dropped/op")
	})
	b.Run("generator/closed-loop", func(b *testing.B) {
		r := benchRunner(b, noopTarget{}, LoadConfig{Concurrency: 1})
		sh := r.shards[0]
		ctx := context.Background()
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			r.do(ctx, sh, i, r.now())
		}
	})

	srv := referencetest.Start(b)
	cfg := grpcConfig(srv.GRPCAddr(), "add_sub")
	cfg.Load.Concurrency = 1
	ctx := context.Background()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	for range 1000 { // warm the connection
		if err := tg.Do(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("target-do", func(b *testing.B) {
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			if err := tg.Do(ctx, i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		r := benchRunner(b, tg, LoadConfig{Concurrency: 1})
		sh := r.shards[0]
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			r.do(ctx, sh, i, r.now())
		}
		b.StopTimer()
		if tl := sh.swap(); tl.ok != int64(b.N) {
			b.Fatalf("%d of %d requests succeeded", tl.ok, b.N)
		}
	})
}
