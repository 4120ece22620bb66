package loadgen

import (
	"context"
	"os"
	"runtime"
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

// fakeStream answers every request with n responses at once.
type fakeStream struct{ n int }

func (fakeStream) Do(context.Context, uint64) error { return nil }

func (f fakeStream) DoStream(_ context.Context, _ uint64, rec *StreamRecorder) error {
	for range f.n {
		rec.Response()
	}
	return nil
}

// BenchmarkStreamHotPath measures the streaming path per request of
// tokensPerRequest responses:
//
//   - generator: the worker's streaming path (clock, recorder, one gap
//     recorded per response, the request's TTFT and counts) with a target
//     that "receives" its responses at once: the generator's own cost;
//   - target: OIPTarget.DoStream against an in-process reference server's
//     tokens fixture with no delay between tokens: sending the pre-encoded
//     request with its id on a pooled ModelStreamInfer stream and reading
//     each response from the wire;
//   - full: both.
//
// Each case reports allocs/response and responses/s besides the per-request
// figures.
func BenchmarkStreamHotPath(b *testing.B) {
	const tokensPerRequest = 16
	var ms runtime.MemStats
	var mallocs uint64
	begin := func(b *testing.B) time.Time {
		b.ReportAllocs()
		runtime.ReadMemStats(&ms)
		mallocs = ms.Mallocs
		return time.Now()
	}
	report := func(b *testing.B, start time.Time) {
		b.StopTimer()
		s := time.Since(start).Seconds()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(b.N*tokensPerRequest)/s, "responses/s")
		b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N*tokensPerRequest), "allocs/response")
	}
	b.Run("generator", func(b *testing.B) {
		r := benchRunner(b, fakeStream{tokensPerRequest}, LoadConfig{Concurrency: 1})
		r.streamer = fakeStream{tokensPerRequest}
		r.shards = newShards(1, true)
		sh := r.shards[0]
		rec := r.recorder(sh)
		ctx := context.Background()
		start := begin(b)
		for i := uint64(0); b.Loop(); i++ {
			r.doStream(ctx, sh, rec, i, r.now())
		}
		report(b, start)
	})

	// The reference server runs in this process, so its allocations count
	// too; OIPKIT_STREAM_BENCH_GRPC=host:port measures against a server in
	// another process (oipkit serve), leaving the client's alone.
	addr := os.Getenv("OIPKIT_STREAM_BENCH_GRPC")
	if addr == "" {
		addr = referencetest.Start(b).GRPCAddr()
	}
	cfg := grpcConfig(addr, "tokens")
	cfg.Streaming = &StreamConfig{}
	cfg.Inputs.File = tokensInput(b, tokensPerRequest)
	cfg.Inputs.Parameters = []string{"interval_ms=0", "first_token_ms=0"}
	cfg.Load.Concurrency = 1
	ctx := context.Background()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	r := benchRunner(b, tg, LoadConfig{Concurrency: 1})
	r.cfg.Streaming = cfg.Streaming
	r.streamer = tg
	r.shards = newShards(1, true)
	sh := r.shards[0]
	rec := r.recorder(sh)
	for i := range uint64(200) { // warm the stream
		if err := tg.DoStream(ctx, i, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("target", func(b *testing.B) {
		start := begin(b)
		for i := uint64(0); b.Loop(); i++ {
			rec.n = 0
			if err := tg.DoStream(ctx, i, rec); err != nil || rec.n != tokensPerRequest {
				b.Fatalf("%d responses, %v", rec.n, err)
			}
		}
		report(b, start)
	})
	b.Run("full", func(b *testing.B) {
		sh.swap()
		start := begin(b)
		for i := uint64(0); b.Loop(); i++ {
			r.doStream(ctx, sh, rec, i, r.now())
		}
		report(b, start)
		if tl := sh.swap(); tl.ok != int64(b.N) || tl.stream.responses != int64(b.N*tokensPerRequest) {
			b.Fatalf("%d of %d requests succeeded, %d responses", tl.ok, b.N, tl.stream.responses)
		}
	})
}
