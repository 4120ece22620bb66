package oiptarget

import (
	"context"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
)

// RunLoop runs a closed loop of REST requests on the client's event loop
// (client.REST.Loop), with the same payloads, sampled checks and outcomes as
// Do. It reports false for gRPC, https, or when the loop is off or cannot
// have n connections (OIPKIT_EVENT_LOOP=off, --connections below the
// concurrency).
func (t *OIPTarget) RunLoop(ctx context.Context, n int, l loadgen.Loop) bool {
	if t.rest == nil || len(t.payloads) == 0 || t.payloads[0].post == nil {
		return false
	}
	d := &loopDriver{t: t, l: l, payloads: make([]*payload, n), keeps: make([]int64, n)}
	return t.rest.Loop(ctx, n, d) == nil
}

// loopDriver is the client's side of the loop: the engine's sequence
// numbers turned into payloads, and answers into outcomes.
type loopDriver struct {
	t        *OIPTarget
	l        loadgen.Loop
	payloads []*payload // each slot's request in flight
	keeps    []int64    // and how much of its answer is kept
}

func (d *loopDriver) Next(slot int) (*client.PreparedInfer, int64, bool) {
	seq, ok := d.l.Next(slot)
	if !ok {
		return nil, 0, false
	}
	p := &d.t.payloads[seq%uint64(len(d.t.payloads))]
	var keep int64
	if d.t.sampled() {
		keep = p.keep
	}
	d.payloads[slot], d.keeps[slot] = p, keep
	return p.post, keep, true
}

func (d *loopDriver) Done(slot int, a client.InferAnswer, err error) {
	d.l.Done(slot, d.t.restOutcome(d.payloads[slot], d.keeps[slot], a, err))
}
