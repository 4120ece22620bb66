package loadgen

import (
	"context"
	"testing"
)

// TestStreamRecordFromIntendedStart: the time to first response counts
// from the intended start, not the send (coordinated omission), exactly.
func TestStreamRecordFromIntendedStart(t *testing.T) {
	sh := newShards(1, true)[0]
	sh.recordStream(100, 500, 900, nil, 3, 700)
	st := sh.cur.stream
	if st.first.Max() != 600 || st.responses != 3 || st.perRequest.Max() != 3 || sh.cur.response.Max() != 800 {
		t.Errorf("first %d, responses %d, response %d", st.first.Max(), st.responses, sh.cur.response.Max())
	}
	if a := testing.AllocsPerRun(100, func() {
		sh.recordGap(1234)
		sh.recordStream(100, 500, 900, nil, 3, 700)
	}); a != 0 {
		t.Errorf("recording a streamed request allocates %v", a)
	}
}

// TestStreamingGeneratorAllocs guards the generator's streaming path: a
// request of many responses records them all without allocating.
func TestStreamingGeneratorAllocs(t *testing.T) {
	r := benchRunner(t, fakeStream{64}, LoadConfig{Concurrency: 1})
	r.streamer = fakeStream{64}
	r.shards = newShards(1, true)
	sh := r.shards[0]
	rec := r.recorder(sh)
	ctx := context.Background()
	if a := testing.AllocsPerRun(200, func() { r.doStream(ctx, sh, rec, 0, r.now()) }); a != 0 {
		t.Errorf("the streaming path allocates %v per request of 64 responses", a)
	}
	if tl := sh.swap(newTally(true)); tl.stream.responses < 64*200 || tl.stream.gap.TotalCount() < 63*200 {
		t.Errorf("recorded %d responses, %d gaps", tl.stream.responses, tl.stream.gap.TotalCount())
	}
}
