package loadgen

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
)

// loopTarget is a LoopTarget whose RunLoop drives the engine's Loop
// synchronously, one request per slot in turn, each answered at once by
// answer; with refuse it cannot run and the engine must call Do instead.
type loopTarget struct {
	refuse   bool
	answer   func(seq uint64) error
	loops    atomic.Int64 // RunLoop calls that ran
	loopReqs atomic.Int64 // requests sent by RunLoop
	doReqs   atomic.Int64 // requests sent by Do
}

func (t *loopTarget) Do(ctx context.Context, seq uint64) error {
	t.doReqs.Add(1)
	return t.answer(seq)
}

func (t *loopTarget) RunLoop(ctx context.Context, n int, l Loop) bool {
	if t.refuse {
		return false
	}
	t.loops.Add(1)
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	for left := n; left > 0; {
		for slot := range n {
			if !active[slot] {
				continue
			}
			seq, ok := l.Next(slot)
			if !ok {
				active[slot] = false
				left--
				continue
			}
			t.loopReqs.Add(1)
			l.Done(slot, t.answer(seq))
		}
	}
	return true
}

func okAnswer(uint64) error { return nil }

func TestLoopRequestsLimit(t *testing.T) {
	tg := &loopTarget{answer: okAnswer}
	res := mustRun(t, tg, fakeConfig(LoadConfig{Concurrency: 8, Requests: 1000}))
	if res.Counts.Sent != 1000 || res.Counts.OK != 1000 {
		t.Errorf("sent %d, ok %d, want 1000 each", res.Counts.Sent, res.Counts.OK)
	}
	if got := tg.loopReqs.Load(); got != 1000 {
		t.Errorf("RunLoop sent %d requests, want exactly 1000", got)
	}
	if tg.loops.Load() == 0 || tg.doReqs.Load() != 0 {
		t.Errorf("%d loops ran and Do sent %d: the run did not go through RunLoop only", tg.loops.Load(), tg.doReqs.Load())
	}
}

func TestLoopDurationEnds(t *testing.T) {
	tg := &loopTarget{answer: func(uint64) error { time.Sleep(time.Millisecond); return nil }}
	res := mustRun(t, tg, fakeConfig(LoadConfig{Concurrency: 4, Duration: Duration(300 * time.Millisecond)}))
	if res.Counts.Sent == 0 || res.Counts.OK != res.Counts.Sent || res.Counts.Errors != 0 {
		t.Errorf("counts %+v, want every sent request ok", res.Counts)
	}
	if tg.loops.Load() == 0 {
		t.Error("RunLoop did not run")
	}
}

func TestLoopFallsBackToWorkers(t *testing.T) {
	tg := &loopTarget{refuse: true, answer: okAnswer}
	res := mustRun(t, tg, fakeConfig(LoadConfig{Concurrency: 8, Requests: 500}))
	if res.Counts.Sent != 500 || res.Counts.OK != 500 {
		t.Errorf("sent %d, ok %d, want 500 each", res.Counts.Sent, res.Counts.OK)
	}
	if tg.doReqs.Load() != 500 || tg.loopReqs.Load() != 0 {
		t.Errorf("Do sent %d, RunLoop %d: want 500 through Do", tg.doReqs.Load(), tg.loopReqs.Load())
	}
}

func TestLoopErrorClasses(t *testing.T) {
	tg := &loopTarget{answer: func(seq uint64) error {
		switch seq % 4 {
		case 1:
			return &client.Error{Op: "Infer", HTTPStatus: 503}
		case 2:
			return errors.New("boom")
		}
		return nil
	}}
	cfg := fakeConfig(LoadConfig{Concurrency: 4, Requests: 400})
	one := 1.0
	cfg.Checks.MaxErrorRate = &one // failures are what this test is about
	res := mustRun(t, tg, cfg)
	if res.Counts.Sent != 400 || res.Counts.OK+res.Counts.Errors+res.Counts.Timeouts != 400 {
		t.Fatalf("counts %+v, want 400 sent and completed", res.Counts)
	}
	if res.Errors["http_503"] == 0 || res.Counts.OK == 0 || res.Counts.Errors < res.Errors["http_503"]+1 {
		t.Errorf("errors %v, counts %+v: want http_503 and another class recorded", res.Errors, res.Counts)
	}
	if tg.loopReqs.Load() != 400 {
		t.Errorf("RunLoop sent %d, want 400", tg.loopReqs.Load())
	}
}

// A closed loop on event loops records into one shard per loop, since no
// other shard would record and each holds a tally of dense histograms; a
// run on workers, or an open loop, keeps its shards per worker group.
func TestLoopShards(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	closed := fakeConfig(LoadConfig{Concurrency: 1000})
	open := fakeConfig(LoadConfig{Rate: rateOf("100"), MaxInFlight: 1000})
	for _, c := range []struct {
		name   string
		target Target
		cfg    Config
		want   int
	}{
		{"event loops", &loopTarget{answer: okAnswer}, closed, 4},
		{"workers", TargetFunc(func(context.Context, uint64) error { return nil }), closed, 8},
		{"open loop", &loopTarget{answer: okAnswer}, open, 8},
		{"two workers", &loopTarget{answer: okAnswer}, fakeConfig(LoadConfig{Concurrency: 2}), 2},
	} {
		r := &runner{target: c.target, cfg: c.cfg, seg: c.cfg.Load.segment()}
		if c.cfg.OpenLoop() {
			r.profile = c.cfg.pacer()
		}
		if got := r.shardCount(); got != c.want {
			t.Errorf("%s: %d shards, want %d", c.name, got, c.want)
		}
	}
}
