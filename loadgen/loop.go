package loadgen

import (
	"context"
	"runtime"
	"sync"
)

// A LoopTarget is a [Target] that can keep many requests of a closed loop
// in flight by itself, on an event loop, instead of being called from a
// goroutine per request: package loadgen/oiptarget's, over plain HTTP/1.1.
// RunLoop sends on n slots, each with one request in flight, taking each
// request's sequence number from l.Next and giving its outcome to l.Done,
// until Next refuses every slot or ctx ends. It reports false, having sent
// nothing, when it cannot run the loop; the engine then calls Do from
// goroutines as for any target.
type LoopTarget interface {
	Target
	RunLoop(ctx context.Context, n int, l Loop) bool
}

// Loop is the engine's side of a [LoopTarget]'s event loop. Its methods are
// called from the loop's goroutine only.
type Loop interface {
	// Next returns the sequence number of the slot's next request, or false
	// when the slot sends no more in this phase.
	Next(slot int) (seq uint64, ok bool)
	// Done records the outcome of the slot's request, as Target.Do returns it.
	Done(slot int, err error)
}

// loopTarget is the target when the run's closed loop runs on its event
// loops: sequences and streams need a goroutine each.
func (r *runner) loopTarget() (LoopTarget, bool) {
	lt, ok := r.target.(LoopTarget)
	return lt, ok && r.profile == nil && r.seqs == nil && r.streamer == nil
}

// loopCount is how many event loops n workers run on: one per processor the
// Go runtime uses.
func loopCount(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// eventLoops runs a closed loop phase on the target's event loops: one per
// processor the Go runtime uses, each with its share of the workers and its
// shard. A loop the target cannot run becomes workers.
func (r *runner) eventLoops(ctx context.Context, t LoopTarget, end int64, limit uint64) {
	n := r.workers()
	loops := min(loopCount(n), len(r.shards))
	var wg sync.WaitGroup
	for i := range loops {
		share := n/loops + btoi(i < n%loops)
		lr := &loopRun{r: r, ctx: ctx, end: end, limit: limit, sh: r.shards[i], sent: make([]int64, share)}
		wg.Go(func() {
			if t.RunLoop(ctx, share, lr) {
				return
			}
			var workers sync.WaitGroup
			for range share {
				workers.Go(func() {
					for {
						seq, sent, ok := lr.take()
						if !ok {
							return
						}
						lr.done(sent, r.target.Do(ctx, seq))
					}
				})
			}
			workers.Wait()
		})
	}
	wg.Wait()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loopRun is one event loop's side of the engine: the closed loop's rule
// for the next request, and the send time of each slot's request.
type loopRun struct {
	r     *runner
	ctx   context.Context
	end   int64
	limit uint64
	sh    *shard
	sent  []int64 // each slot's request's send time
}

func (lr *loopRun) Next(slot int) (uint64, bool) {
	seq, sent, ok := lr.take()
	lr.sent[slot] = sent
	return seq, ok
}

// take is the closed loop's rule (as runner.closedLoop's workers apply it):
// the next sequence number and its send time, unless the phase is over.
func (lr *loopRun) take() (seq uint64, sent int64, ok bool) {
	r := lr.r
	if lr.ctx.Err() != nil || r.stopped() {
		return 0, 0, false
	}
	now := r.now()
	if now >= lr.end {
		return 0, 0, false
	}
	seq = r.sent.Add(1) - 1
	if lr.limit > 0 && seq >= lr.limit {
		r.sent.Add(^uint64(0)) // not sent after all
		return 0, 0, false
	}
	r.inflight.Add(1)
	return seq, now, true
}

func (lr *loopRun) Done(slot int, err error) { lr.done(lr.sent[slot], err) }

func (lr *loopRun) done(sent int64, err error) {
	done := lr.r.now()
	lr.r.inflight.Add(-1)
	if err != nil && lr.ctx.Err() != nil {
		return // cut short by the run's own end
	}
	lr.sh.record(sent, sent, done, err)
}
