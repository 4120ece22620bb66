package oiptarget

import (
	"context"
	"testing"

	"github.com/oipkit/oipkit/loadgen"
)

// grpcAllocsPerMessage is what grpc-go's transport allocates for each
// message it receives on a stream (a memory profile of this test:
// framer.readDataFrame 2, Stream.read 1, mem.SliceBuffer.read 1); the
// generator's own scan of a response allocates nothing (TestStreamMessageScan).
const grpcAllocsPerMessage = 4

// TestStreamingHotPathAllocs guards the generator's per-response path over
// gRPC ModelStreamInfer: a tokens request answered by many responses from
// the reference (in its own process, as in TestHotPathAllocs). Each response
// beyond the first may cost what grpc-go allocates per message and nothing
// more; a request, a bounded few more.
func TestStreamingHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations of its own")
	}
	_, grpcAddr := referenceSubprocess(t)
	ctx := context.Background()
	perRequest := map[int]float64{}
	for _, n := range []int{8, 64} {
		tg, err := NewTarget(ctx, tokensConfig(t, grpcAddr, n, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		rec := loadgen.NewStreamRecorder()
		var seq uint64
		do := func() {
			rec.Reset()
			if err := tg.DoStream(ctx, seq, rec); err != nil {
				t.Fatalf("%d responses: %v", n, err)
			}
			if rec.Responses() != int64(n) {
				t.Fatalf("%d responses received, want %d", rec.Responses(), n)
			}
			seq++
		}
		for range 100 { // the stream, pools and buffers warm
			do()
		}
		perRequest[n] = testing.AllocsPerRun(300, do)
		t.Logf("a request of %d responses: %.1f allocations", n, perRequest[n])
		tg.Close()
	}
	if perResponse := (perRequest[64] - perRequest[8]) / 56; perResponse > grpcAllocsPerMessage+0.25 { // pings and window updates come and go
		t.Errorf("%.2f allocations per response, want at most grpc-go's own %d", perResponse, grpcAllocsPerMessage)
	}
	if own := perRequest[8] - 8*grpcAllocsPerMessage; own > 16 {
		t.Errorf("a request of 8 responses costs %.0f allocations besides grpc-go's per message, want at most 16", own)
	}
}
