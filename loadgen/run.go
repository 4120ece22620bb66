package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oipkit/oipkit/client"
)

// A Target sends one request. Do is called concurrently from many
// goroutines and must be safe for that. seq numbers the request within the
// run (from 0) and selects which pre-serialized payload to send, so Do does
// no encoding. Do returns nil for a successful answer, or an error the
// engine classifies (see [ErrorClass]): a [*client.Error], a gRPC status,
// an [*HTTPStatusError], a [*ValidationError], or one wrapping
// context.DeadlineExceeded for a timeout. Package loadgen/oiptarget has the
// OIP one; any other system under test needs only a Do.
type Target interface {
	Do(ctx context.Context, seq uint64) error
}

// TargetFunc is a function used as a [Target].
type TargetFunc func(ctx context.Context, seq uint64) error

// Do calls f.
func (f TargetFunc) Do(ctx context.Context, seq uint64) error { return f(ctx, seq) }

// Run executes the load described by cfg against t and returns its result:
// one measurement, of a single level or of a rate profile. Sweeps and SLO
// searches, which run one measurement per level, are package
// loadgen/search's. It returns an error wrapping ErrConfig for an invalid
// configuration; failures of individual requests are counted in the
// result, never returned. Cancelling ctx ends the run early with EndReason
// canceled (or deadline when ctx's deadline expired) and a result covering
// what ran.
func Run(ctx context.Context, t Target, cfg Config) (*Result, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	if err := CheckTarget(t, cfg); err != nil {
		return nil, err
	}
	if cfg.SLO != nil || cfg.Sweep() {
		return nil, configErr("a sweep or an SLO search runs one measurement per level: run it with package loadgen/search")
	}
	return runOnce(ctx, t, cfg), nil
}

// CheckTarget refuses a target that cannot do what cfg asks: stream, or
// send sequences.
func CheckTarget(t Target, cfg Config) error {
	if cfg.Streaming != nil {
		if _, ok := t.(StreamTarget); !ok {
			return configErr("Config.Streaming: the target %T does not stream", t)
		}
	}
	if cfg.Sequence != nil {
		if _, ok := t.(SequenceTarget); !ok {
			return configErr("Sequence.Length: the target %T does not send sequences", t)
		}
	}
	return nil
}

// runOnce runs one measurement of a normalized single-level configuration.
func runOnce(ctx context.Context, t Target, cfg Config) *Result {
	r := &runner{target: t, cfg: cfg, base: time.Now(), seg: cfg.Load.segment()}
	if cfg.Streaming != nil {
		r.streamer, _ = t.(StreamTarget) // checked by Run
	}
	if cfg.Sequence != nil {
		r.sequencer, _ = t.(SequenceTarget) // checked by Run
		r.seqs = newSequences(*cfg.Sequence, r.seg, cfg.OpenLoop())
	}
	if cfg.OpenLoop() {
		r.profile = cfg.pacer()
	}
	return r.run(ctx)
}

func nowWall() time.Time { return time.Now() }

// runner holds one run's state. Times are monotonic nanoseconds since base.
type runner struct {
	target   Target
	streamer StreamTarget // the target, when the run streams
	// sequencer is the target and seqs the live sequences, when the run
	// sends sequences.
	sequencer SequenceTarget
	seqs      *sequences
	cfg       Config
	profile   Pacer // nil for a closed loop
	base      time.Time
	seg       Segment // the run's part of the test (whole when not split)
	shards    []*shard

	sent     atomic.Uint64 // requests handed to Target.Do (also the next seq)
	dropped  atomic.Int64  // open loop: due while MaxInFlight were in flight
	inflight atomic.Int64

	// stop ends the current phase early (stable, or a threshold failed
	// under Config.AbortOnFail): dispatching stops, requests in flight finish.
	stop     chan struct{}
	stopOnce *sync.Once
	stopAt   atomic.Int64
}

// stopNow ends the current phase; safe to call more than once.
func (r *runner) stopNow() {
	r.stopOnce.Do(func() {
		r.stopAt.Store(r.now())
		close(r.stop)
	})
}

// resetStop arms the stop signal for the next phase; it is called before
// the phase and its collector start.
func (r *runner) resetStop() {
	r.stop, r.stopOnce = make(chan struct{}), new(sync.Once)
	r.stopAt.Store(0)
}

func (r *runner) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func (r *runner) now() int64 { return int64(time.Since(r.base)) }

func (r *runner) workers() int {
	if r.profile == nil {
		return int(r.seg.Share(int64(r.cfg.Load.Concurrency)))
	}
	return r.cfg.Load.MaxInFlight
}

// rateShare is the part of the test's requested rate this run sends.
func (r *runner) rateShare() float64 { return 1 / float64(max(r.seg.Count, 1)) }

func (r *runner) run(ctx context.Context) *Result {
	r.shards = newShards(r.shardCount(), r.cfg.Streaming != nil)
	l := r.cfg.Load
	res := NewResult(r.cfg)

	// A shared start: wait for it here, so that the warm-up, the
	// measurement and every interval are placed from it alike in every
	// segment. A start already past cannot be kept: the segment's share
	// of the schedule would be sent late, all at once.
	origin := r.now()
	if !l.StartAt.IsZero() {
		wait := time.Until(l.StartAt)
		if wait < 0 {
			res.Start = time.Now()
			res.EndReason = EndError
			res.Error = fmt.Sprintf("the start time %s had passed %v before the target was ready: the run would not line up with the others started at it; give a start time further ahead",
				l.StartAt.Format(time.RFC3339Nano), (-wait).Round(time.Millisecond))
			return res
		}
		origin += int64(wait)
		w := newWaiter()
		ok := w.until(ctx, r, origin)
		w.stop()
		if !ok {
			res.Start = time.Now()
			res.EndReason, res.Error = EndCanceled, "interrupted before the start time"
			if ctx.Err() == context.DeadlineExceeded {
				res.EndReason, res.Error = EndDeadline, "the caller's deadline expired before the start time"
			}
			return res
		}
	}

	// Warm-up: the same load, recorded into the same shards and then thrown
	// away, so connections, pools and the server's caches are warm.
	warm := l.Warmup > 0 || l.WarmupRequests > 0
	if r.profile == nil && l.WarmupRequests > 0 && r.seg.Share(l.WarmupRequests) == 0 {
		warm = false // this segment's share of the warm-up is nothing
	}
	if warm {
		r.resetStop()
		r.phase(ctx, origin, l.Warmup.D(), uint64(l.WarmupRequests))
		res.Warmup = WarmupStats{Requests: int64(r.sent.Load()), Duration: Duration(r.now() - origin)}
		for _, s := range r.shards {
			s.clear()
		}
		r.sent.Store(0)
		r.dropped.Store(0)
		if l.StartAt.IsZero() || l.Warmup == 0 {
			origin = r.now()
		} else {
			// The measurement starts Warmup after the shared start in
			// every segment, however long each one's warm-up drained.
			origin += int64(l.Warmup)
		}
	}

	// The server's statistics before the window (read before the window
	// starts, so the read does not delay the first requests; with a shared
	// start the window cannot wait for it and the breakdown is left out).
	var statsBefore *ServerBreakdown
	if l.StartAt.IsZero() {
		if statsBefore = readServerStats(ctx, r.target); statsBefore != nil {
			origin = r.now()
		}
	}
	r.resetStop()
	res.Start = time.Now().Add(time.Duration(origin - r.now()))
	if !l.StartAt.IsZero() && l.WarmupRequests == 0 {
		res.Start = l.StartAt.Add(l.Warmup.D()) // exactly, so segments' intervals share their times
	}
	meter := startMeter()
	col := newCollector(r, res.Start)
	t0 := origin
	col.start(t0)
	ph := r.phase(ctx, t0, l.Duration.D(), uint64(l.Requests))
	end := r.now()
	col.stop(end)
	meter.stop()

	res.EndReason = EndCompleted
	if err := ctx.Err(); err != nil {
		res.EndReason = EndCanceled
		res.Error = "interrupted"
		if err == context.DeadlineExceeded {
			res.EndReason = EndDeadline
			res.Error = "the caller's deadline expired"
		}
	} else if col.abortWhy != "" {
		res.EndReason, res.Error = EndAborted, col.abortWhy+" (Config.AbortOnFail)"
	}
	if statsBefore != nil && ctx.Err() == nil {
		res.Server = readServerStats(ctx, r.target).Delta(statsBefore)
	}
	res.Duration = Duration(max(ph.windowEnd-t0, 0))
	res.Elapsed = Duration(max(end-t0, 0))
	col.fill(res)
	res.Counts.Sent = int64(r.sent.Load())
	res.Counts.Dropped = r.dropped.Load()
	res.Counts.Unsent = ph.unsent
	res.Counts.Scheduled = res.Counts.Sent + res.Counts.Dropped + res.Counts.Unsent
	if r.profile != nil && res.Duration > 0 {
		res.Rates.Requested = r.rateShare() * r.profile.Expected(res.Duration.D()) / res.Duration.D().Seconds()
	}
	res.computeRates()
	res.Summarize()
	res.Checks = r.checks(res, meter)
	if res.EndReason == EndCompleted {
		if why := r.stoppedAnswering(ctx, res); why != "" {
			res.EndReason, res.Error = EndError, why
		}
	}
	return res
}

// An AnsweringTarget is a [Target] that can tell whether its server still
// answers: Answering returns nil when it does, an error wrapping
// client.ErrUnreachable when nothing answers at its address. A run whose
// last requests all failed asks it, to tell a server that went away from
// one that answered badly.
type AnsweringTarget interface {
	Answering(ctx context.Context) error
}

// stoppedAnswering says when and how the server stopped answering, or "":
// no request succeeded from some point of the measurement to its end, some
// failed, and after the run the server does not answer a liveness probe.
// Such a run could not complete: its failures describe a server that went
// away, not one that answered badly (which the failed-request bound
// judges).
func (r *runner) stoppedAnswering(ctx context.Context, res *Result) string {
	a, ok := r.target.(AnsweringTarget)
	if !ok || len(res.Intervals) == 0 || res.Counts.Errors+res.Counts.Timeouts == 0 {
		return ""
	}
	last := -1 // the last interval with a success
	for i, iv := range res.Intervals {
		if iv.OK > 0 {
			last = i
		}
	}
	var failed int64
	for _, iv := range res.Intervals[last+1:] {
		failed += iv.Errors + iv.Timeouts
	}
	if failed == 0 {
		return ""
	}
	err := a.Answering(ctx)
	if err == nil || !errors.Is(err, client.ErrUnreachable) {
		return ""
	}
	// The last success is known to the interval: the server stopped
	// answering within it (or before the first success, in the first).
	from, to := 0.0, res.Intervals[0].Length
	if last >= 0 {
		from = res.Intervals[last].Start
		to = from + res.Intervals[last].Length
	}
	when := res.Start.Add(time.Duration(to * float64(time.Second))).UTC().Format("15:04:05Z07:00")
	return fmt.Sprintf("the server stopped answering %.1f–%.1fs into the measurement (by %s): all %d requests completed after that failed, and after the run it did not answer a liveness probe: %v",
		from, to, when, failed, err)
}

// phaseEnd describes how a phase ended.
type phaseEnd struct {
	windowEnd int64 // when dispatching stopped
	unsent    int64 // open loop: due within the window but never dispatched
}

// phase sends load from t0 (the runner's clock; it may be ahead) for dur
// (0: no limit) or until limit requests were sent (0: no limit), then
// waits for requests in flight to finish. limit is the test's: in an open
// loop it bounds the index in the test's schedule, in a closed loop it is
// split over the segments.
func (r *runner) phase(ctx context.Context, t0 int64, dur time.Duration, limit uint64) phaseEnd {
	if dur <= 0 || dur > 100*365*24*time.Hour {
		dur = 100 * 365 * 24 * time.Hour // no time limit
	}
	if r.profile == nil {
		return r.closedLoop(ctx, t0, dur, limit)
	}
	return r.openLoop(ctx, t0, dur, limit)
}

// closedLoop runs Concurrency workers that each send the next request as
// soon as the previous one finished. The intended start of a request is its
// actual send, so response and service time coincide and send lag is zero.
func (r *runner) closedLoop(ctx context.Context, t0 int64, dur time.Duration, limit uint64) phaseEnd {
	end := t0 + int64(dur)
	if t0 > r.now() {
		w := newWaiter()
		ok := w.until(ctx, r, t0)
		w.stop()
		if !ok {
			return phaseEnd{windowEnd: r.windowEnd(end)}
		}
	}
	if limit > 0 {
		limit = uint64(r.seg.Share(int64(limit)))
	}
	var wg sync.WaitGroup
	if lt, ok := r.loopTarget(); ok {
		r.eventLoops(ctx, lt, end, limit)
		return phaseEnd{windowEnd: r.windowEnd(end)}
	}
	for w := range r.workers() {
		sh := r.shards[w%len(r.shards)]
		rec := r.recorder(sh)
		st := new(sequenceState)
		wg.Go(func() {
			if r.seqs != nil {
				defer r.endSequence(ctx, st) // a sequence the window cut short
			}
			for ctx.Err() == nil && !r.stopped() {
				now := r.now()
				if now >= end {
					return
				}
				seq := r.sent.Add(1) - 1
				if limit > 0 && seq >= limit {
					r.sent.Add(^uint64(0)) // not sent after all
					return
				}
				if r.seqs != nil {
					r.doSequence(ctx, sh, st, rec, seq, now)
					continue
				}
				r.exec(ctx, sh, rec, seq, now)
			}
		})
	}
	wg.Wait()
	return phaseEnd{windowEnd: r.windowEnd(end)}
}

// windowEnd is when the phase's window closed: end, or earlier when the
// phase was stopped or cancelled.
func (r *runner) windowEnd(end int64) int64 {
	if at := r.stopAt.Load(); at > 0 {
		return min(end, at)
	}
	return min(end, r.now())
}

// slot is one scheduled request handed from the dispatcher to a worker.
type slot struct {
	seq uint64
	due int64
}

// openLoop dispatches requests at the schedule's intended start times. One
// dispatcher goroutine walks the schedule and hands each slot to an idle
// worker over an unbuffered channel; when none is idle it starts another
// worker, up to MaxInFlight, and past that drops the slot and counts it.
// A late dispatcher does not shift later slots (they are computed from the
// schedule alone); it sends them at once and the lag shows in the response
// time and the send-lag histogram.
func (r *runner) openLoop(ctx context.Context, t0 int64, dur time.Duration, limit uint64) phaseEnd {
	sched := r.profile.Arrivals(r.seg)
	slots := make(chan slot)
	var wg sync.WaitGroup
	workers := 0
	w := newWaiter()
	defer w.stop()

	windowEnd := t0 + int64(dur)
	var out phaseEnd
	for ctx.Err() == nil && !r.stopped() {
		off, ok := sched.Next()
		if !ok || off >= dur {
			break
		}
		i := sched.Index() // request i of the test, whichever segment sends it
		if limit > 0 && i >= limit {
			break
		}
		due := t0 + int64(off)
		if !w.until(ctx, r, due) {
			break
		}
		if r.now() >= windowEnd { // so far behind that the window closed
			out.unsent = 1 + countBefore(sched, dur, limit)
			break
		}
		s := slot{seq: i, due: due}
		select {
		case slots <- s:
			r.sent.Add(1)
		default:
			if workers >= r.cfg.Load.MaxInFlight {
				r.dropped.Add(1)
				continue
			}
			r.sent.Add(1)
			sh := r.shards[workers%len(r.shards)]
			workers++
			wg.Go(func() { r.worker(ctx, sh, slots, s) })
		}
	}
	if limit == 0 && out.unsent == 0 && !r.stopped() {
		w.until(ctx, r, windowEnd) // the window is the whole duration
	}
	out.windowEnd = r.windowEnd(windowEnd)
	close(slots)
	wg.Wait()
	if r.seqs != nil {
		r.endIdleSequences(ctx)
	}
	return out
}

// worker runs first and then every slot it receives until slots is closed.
func (r *runner) worker(ctx context.Context, sh *shard, slots <-chan slot, first slot) {
	rec := r.recorder(sh)
	for s, ok := first, true; ok; s, ok = <-slots {
		r.exec(ctx, sh, rec, s.seq, s.due)
	}
}

// recorder is a worker's stream recorder; nil unless the run streams.
func (r *runner) recorder(sh *shard) *StreamRecorder {
	if r.streamer == nil {
		return nil
	}
	return &StreamRecorder{r: r, sh: sh}
}

// exec sends request seq, streamed when rec is set.
func (r *runner) exec(ctx context.Context, sh *shard, rec *StreamRecorder, seq uint64, due int64) {
	if r.seqs != nil { // open loop: the request takes an idle sequence
		r.doSequence(ctx, sh, nil, rec, seq, due)
		return
	}
	if rec != nil {
		r.doStream(ctx, sh, rec, seq, due)
		return
	}
	r.do(ctx, sh, seq, due)
}

// do sends request seq intended to start at due and records it. Requests
// cut short because the run itself was cancelled are not recorded.
func (r *runner) do(ctx context.Context, sh *shard, seq uint64, due int64) {
	r.inflight.Add(1)
	sent := r.now()
	err := r.target.Do(ctx, seq)
	done := r.now()
	r.inflight.Add(-1)
	if err != nil && ctx.Err() != nil {
		return
	}
	sh.record(due, sent, done, err)
}

// countBefore counts the schedule's remaining slots before dur and below
// the index limit (0: none).
func countBefore(s Arrivals, dur time.Duration, limit uint64) int64 {
	var n int64
	for {
		off, ok := s.Next()
		if !ok || off >= dur || (limit > 0 && s.Index() >= limit) {
			return n
		}
		n++
	}
}

// waiter blocks the dispatcher until an intended start time with low
// jitter. Go timers on Linux wake late by up to about a millisecond for
// short waits (the netpoller sleeps in whole milliseconds), so long waits
// use a timer that aims spinAhead+timerSlack early, the rest a
// nanosleep of the dispatcher's thread that aims spinAhead early (hrtimer
// wake-ups are late by ~50–100 µs), and the last stretch yields in a loop.
type waiter struct {
	timer *time.Timer
}

const (
	spinAhead  = 100 * time.Microsecond // yield-spin this close to the due time
	timerSlack = 2 * time.Millisecond   // Go timer wake-ups can be this late
)

func newWaiter() *waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{timer: t}
}

func (w *waiter) stop() { w.timer.Stop() }

// until waits until the runner's clock reaches due and reports false if ctx
// ended or the phase was stopped first. It does not allocate.
func (w *waiter) until(ctx context.Context, r *runner, due int64) bool {
	for {
		rem := time.Duration(due - r.now())
		switch {
		case rem <= 0:
			return true
		case rem > timerSlack+spinAhead:
			w.timer.Reset(rem - timerSlack)
			select {
			case <-ctx.Done():
				w.timer.Stop()
				return false
			case <-r.stop:
				w.timer.Stop()
				return false
			case <-w.timer.C:
			}
		case rem > spinAhead:
			ts := syscall.NsecToTimespec(int64(rem - spinAhead))
			_ = syscall.Nanosleep(&ts, nil) // EINTR only shortens the sleep
		default:
			runtime.Gosched()
		}
	}
}
