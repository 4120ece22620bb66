package oiptarget

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// BenchmarkGRPCRawHotPath measures the steady-state request path of a
// gRPC raw run, per request (the generator's own part is loadgen's
// BenchmarkGeneratorHotPath):
//
//   - target-do: OIPTarget.Do alone, i.e. sending the pre-encoded request
//     through grpc-go to an in-process reference server and dropping the
//     reply unread;
//   - full: loadgen.Run of b.N requests with the real target (generator +
//     target-do, and the run's setup spread over the requests).
//
// What they allocate is grpc-go's call machinery (stream, headers, HTTP/2
// frames) and the per-request timeout context, not serialization: no
// protobuf message is built or marshalled.
func BenchmarkGRPCRawHotPath(b *testing.B) {
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
		run := cfg
		run.Load.Duration, run.Load.Requests = 0, int64(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		res, err := loadgen.Run(ctx, tg, run)
		b.StopTimer()
		if err != nil || res.Counts.OK != int64(b.N) {
			b.Fatalf("%v: %d of %d requests succeeded", err, res.Counts.OK, b.N)
		}
	})
}

// BenchmarkStreamHotPath measures OIPTarget.DoStream per request of
// tokensPerRequest responses, against an in-process reference server's
// tokens fixture with no delay between tokens: sending the pre-encoded
// request with its id on a pooled ModelStreamInfer stream and reading each
// response from the wire (the generator's part is loadgen's
// BenchmarkStreamGenerator). It reports allocs/response and responses/s
// besides the per-request figures.
func BenchmarkStreamHotPath(b *testing.B) {
	const tokensPerRequest = 16
	// The reference server runs in this process, so its allocations count
	// too; OIPKIT_STREAM_BENCH_GRPC=host:port measures against a server in
	// another process (oipkit serve), leaving the client's alone.
	addr := os.Getenv("OIPKIT_STREAM_BENCH_GRPC")
	if addr == "" {
		addr = referencetest.Start(b).GRPCAddr()
	}
	cfg := grpcConfig(addr, "tokens")
	cfg.Streaming = &loadgen.StreamConfig{}
	cfg.Inputs.File = tokensInput(b, tokensPerRequest)
	cfg.Inputs.Parameters = []string{"interval_ms=0", "first_token_ms=0"}
	cfg.Load.Concurrency = 1
	ctx := context.Background()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	rec := loadgen.NewStreamRecorder()
	for i := range uint64(200) { // warm the stream
		rec.Reset()
		if err := tg.DoStream(ctx, i, rec); err != nil {
			b.Fatal(err)
		}
	}
	var ms runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	start := time.Now()
	for i := uint64(0); b.Loop(); i++ {
		rec.Reset()
		if err := tg.DoStream(ctx, i, rec); err != nil || rec.Responses() != tokensPerRequest {
			b.Fatalf("%d responses, %v", rec.Responses(), err)
		}
	}
	b.StopTimer()
	s := time.Since(start).Seconds()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N*tokensPerRequest)/s, "responses/s")
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N*tokensPerRequest), "allocs/response")
}
