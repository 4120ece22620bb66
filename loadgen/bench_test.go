package loadgen

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// noopTarget answers at once: with it, a benchmark measures only the
// generator's own work.
type noopTarget struct{}

func (noopTarget) Do(context.Context, uint64) error { return nil }

func benchRunner(tb testing.TB, t Target, load LoadConfig) *runner {
	cfg := Config{Load: load}
	if err := cfg.Normalize(); err != nil {
		tb.Fatal(err)
	}
	r := &runner{target: t, cfg: cfg, base: time.Now()}
	if cfg.OpenLoop() {
		r.profile = cfg.pacer()
	}
	r.shards = newShards(r.shardCount(), false)
	r.resetStop()
	return r
}

// BenchmarkGeneratorHotPath measures the generator's own steady-state
// request path, per request, with a no-op target (the OIP target's own
// path is oiptarget's BenchmarkGRPCRawHotPath):
//
//   - open-loop: the dispatcher walking the schedule, the hand-off to a
//     worker, the clock reads and the recording (rate 10^6/s: the
//     dispatcher only yields between slots);
//   - closed-loop: a worker's loop (clock, in-flight gauge, record).
//
// It allocates nothing per request (0 allocs/op).
func BenchmarkGeneratorHotPath(b *testing.B) {
	b.Run("open-loop", func(b *testing.B) {
		r := benchRunner(b, noopTarget{}, LoadConfig{Rate: rateOf("1000000"), MaxInFlight: 64})
		b.ReportAllocs()
		b.ResetTimer()
		r.openLoop(context.Background(), r.now(), time.Hour, uint64(b.N))
		b.StopTimer()
		b.ReportMetric(float64(r.dropped.Load())/float64(b.N), "dropped/op")
	})
	b.Run("closed-loop", func(b *testing.B) {
		r := benchRunner(b, noopTarget{}, LoadConfig{Concurrency: 1})
		sh := r.shards[0]
		ctx := context.Background()
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			r.do(ctx, sh, i, r.now())
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

// BenchmarkStreamGenerator measures the worker's streaming path (clock,
// recorder, one gap recorded per response, the request's TTFT and counts)
// per request of 16 responses, with a target that "receives" them at once:
// the generator's own cost. It reports allocs/response and responses/s.
func BenchmarkStreamGenerator(b *testing.B) {
	const tokensPerRequest = 16
	var ms runtime.MemStats
	r := benchRunner(b, fakeStream{tokensPerRequest}, LoadConfig{Concurrency: 1})
	r.streamer = fakeStream{tokensPerRequest}
	r.shards = newShards(1, true)
	sh := r.shards[0]
	rec := r.recorder(sh)
	ctx := context.Background()
	b.ReportAllocs()
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	start := time.Now()
	for i := uint64(0); b.Loop(); i++ {
		r.doStream(ctx, sh, rec, i, r.now())
	}
	b.StopTimer()
	s := time.Since(start).Seconds()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N*tokensPerRequest)/s, "responses/s")
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N*tokensPerRequest), "allocs/response")
}
