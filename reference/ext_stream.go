package reference

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// ModelStreamInfer (Triton's streaming extension, catalog OIP-EXT-SEQ-006)
// serves any model on a bidirectional stream. Each request is computed in
// its own goroutine, so the responses of different requests may
// interleave; each response echoes its request's id. A failed request is
// answered in error_message and the stream stays open. Every response
// carries triton_final_response, true on the last one of its request.
//
// Bounds: at most Config.MaxStreams streams are open at once; at most
// Config.MaxStreamInflight requests of one stream are computed at once,
// beyond which the server stops reading (flow control holds the client
// back); responses wait in a short queue while the client is slow to read;
// a stream with nothing in flight and nothing received for
// Config.StreamIdleTimeout is ended.

// streamQueue is the number of responses of one stream waiting to be sent.
const streamQueue = 16

// streamLimits counts open streams and tells them when the server shuts
// down.
type streamLimits struct {
	open      atomic.Int64
	max       int64
	closing   chan struct{}
	closeOnce sync.Once
}

func newStreamLimits(maxStreams int) streamLimits {
	return streamLimits{max: int64(maxStreams), closing: make(chan struct{})}
}

func (l *streamLimits) acquire() bool {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		return false
	}
	return true
}

func (l *streamLimits) release() { l.open.Add(-1) }

func (l *streamLimits) closeAll() { l.closeOnce.Do(func() { close(l.closing) }) }

// outgoing is a response waiting to be sent; timer, when set, times it
// once Send returned (the writer is the only goroutine that touches it).
type outgoing struct {
	r     *inferencepb.ModelStreamInferResponse
	timer *responseTimer
}

// received is one Recv result.
type received struct {
	msg *inferencepb.ModelInferRequest
	err error
	at  time.Time // when Recv returned: the request's receipt in the statistics
}

func (g *grpcService) ModelStreamInfer(stream grpc.BidiStreamingServer[inferencepb.ModelInferRequest, inferencepb.ModelStreamInferResponse]) error {
	s := g.s
	if !s.streams.acquire() {
		return status.Errorf(codes.ResourceExhausted,
			"too many open ModelStreamInfer streams (limit %d, server option --max-streams); close one and retry", s.streams.max)
	}
	defer s.streams.release()

	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	sc := &streamCall{s: s, ctx: ctx, out: make(chan outgoing, streamQueue),
		slots: make(chan struct{}, s.cfg.MaxStreamInflight)}

	// The writer is the only goroutine that calls Send. After a failed Send
	// it keeps draining the queue so that no request goroutine blocks.
	var sendErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for o := range sc.out {
			if sendErr != nil {
				continue
			}
			if err := stream.Send(o.r); err != nil {
				sendErr = err
				cancel(err)
			} else if o.timer != nil {
				o.timer.responded()
			}
			sc.touch()
		}
	}()
	// The reader delivers Recv results so that the loop below can also
	// watch the idle timer and shutdown.
	reqs := make(chan received)
	go func() {
		for {
			m, err := stream.Recv()
			select {
			case reqs <- received{m, err, time.Now()}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	err := sc.readLoop(reqs)
	sc.wg.Wait() // requests in flight are answered (or see ctx end)
	close(sc.out)
	<-writerDone
	switch {
	case err != nil:
		return err
	case sendErr != nil:
		return sendErr
	}
	return nil
}

// streamCall is one ModelStreamInfer call.
type streamCall struct {
	s     *Server
	ctx   context.Context
	out   chan outgoing
	slots chan struct{} // one per request in flight
	wg    sync.WaitGroup
	last  atomic.Int64 // unix nanoseconds of the last activity
}

func (sc *streamCall) touch() { sc.last.Store(time.Now().UnixNano()) }

// readLoop starts a goroutine per received request until the client
// half-closes (nil), the stream fails, stays idle too long or the server
// shuts down (a status error).
func (sc *streamCall) readLoop(reqs <-chan received) error {
	idleLimit := sc.s.cfg.StreamIdleTimeout
	idle := time.NewTimer(idleLimit)
	defer idle.Stop()
	sc.touch()
	for {
		select {
		case r := <-reqs:
			if r.err == io.EOF {
				return nil
			}
			if r.err != nil {
				return r.err
			}
			sc.touch()
			select { // wait for a free slot: the stream is not read meanwhile
			case sc.slots <- struct{}{}:
			case <-sc.ctx.Done():
				return status.FromContextError(context.Cause(sc.ctx)).Err()
			}
			sc.wg.Add(1)
			go sc.serve(r.msg, r.at)
		case <-idle.C:
			quiet := time.Since(time.Unix(0, sc.last.Load()))
			if len(sc.slots) > 0 || quiet < idleLimit {
				idle.Reset(max(idleLimit-quiet, time.Millisecond))
				continue
			}
			return status.Errorf(codes.DeadlineExceeded,
				"ModelStreamInfer stream idle for %s with no request in flight; ended by the server (server option --stream-idle-timeout)", idleLimit)
		case <-sc.s.streams.closing:
			// The caller answers the requests in flight before the status.
			return status.Error(codes.Unavailable, "server shutting down: ModelStreamInfer stream ended after its requests were answered")
		case <-sc.ctx.Done():
			return status.FromContextError(context.Cause(sc.ctx)).Err()
		}
	}
}

// send queues a response, timed by timer (may be nil) once sent; false
// when the stream is gone.
func (sc *streamCall) send(r *inferencepb.ModelStreamInferResponse, timer *responseTimer) bool {
	select {
	case sc.out <- outgoing{r, timer}:
		return true
	case <-sc.ctx.Done():
		return false
	}
}

// serve answers one request, with panics turned into an error response.
func (sc *streamCall) serve(pb *inferencepb.ModelInferRequest, received time.Time) {
	defer func() {
		if p := recover(); p != nil {
			sc.s.log.Error("ModelStreamInfer request panicked", "model", pb.GetModelName(), "panic", p, "stack", string(debug.Stack()))
			sc.fail(pb, "", &panicError{where: "ModelStreamInfer request", value: p})
		}
		<-sc.slots
		sc.touch()
		sc.wg.Done()
	}()
	version, err := sc.infer(pb, received)
	if err != nil {
		sc.fail(pb, version, err)
	}
}

// fail answers pb with an error message; the response still names the
// request so that a client can match it when responses interleave.
func (sc *streamCall) fail(pb *inferencepb.ModelInferRequest, version string, err error) {
	if grpcCode(err) == codes.Internal {
		sc.s.log.Error("ModelStreamInfer request failed", "model", pb.GetModelName(), "err", err)
	}
	sc.send(&inferencepb.ModelStreamInferResponse{
		ErrorMessage: err.Error(),
		InferResponse: &inferencepb.ModelInferResponse{
			ModelName: pb.GetModelName(), ModelVersion: version, Id: pb.GetId(),
			Parameters: map[string]*inferencepb.InferParameter{
				oip.ParamTritonFinalResponse: {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
			},
		},
	}, nil)
}

// infer runs one request and queues its responses. It returns the
// resolved version (for error responses) and the error, if any. A request
// to a decoupled model is recorded in the statistics from its receipt to
// its last response, with the time to its first response and the gaps
// between its responses.
func (sc *streamCall) infer(pb *inferencepb.ModelInferRequest, received time.Time) (string, error) {
	s := sc.s
	m, version, err := s.lookup(pb.GetModelName(), pb.GetModelVersion())
	if err != nil {
		return "", err
	}
	req, usedRaw, err := oip.FromProtoRequest(pb, oip.Limits{MaxElements: s.cfg.MaxTensorElements})
	if err != nil {
		return version, fmt.Errorf("decode request: %w", err)
	}
	req.Model, req.Version = pb.GetModelName(), version
	emit := func(resp *oip.InferResponse, final bool, timer *responseTimer) error {
		if resp.Parameters == nil {
			resp.Parameters = oip.Parameters{}
		}
		resp.Parameters[oip.ParamTritonFinalResponse] = final
		out, err := oip.ToProtoResponse(resp, usedRaw)
		if err != nil {
			return fmt.Errorf("encode response: %w", err)
		}
		if !sc.send(&inferencepb.ModelStreamInferResponse{InferResponse: out}, timer) {
			return context.Cause(sc.ctx)
		}
		return nil
	}

	d, ok := m.(model.Decoupled)
	if !ok {
		resp, err := s.infer(sc.ctx, m, version, req)
		if err != nil {
			return version, err
		}
		return version, emit(resp, true, nil)
	}
	md := m.Metadata()
	st := s.stats.of(md.Name, version)
	gate, queued, err := s.instances.enter(sc.ctx, md.Name, req.Parameters) // instances.go
	if err != nil {
		st.failed(time.Since(received))
		return version, err
	}
	defer gate.leave()
	inputs, err := validateRequest(&md, req)
	if err != nil {
		st.failed(time.Since(received))
		return version, err
	}
	defer releaseInputs(inputs)
	inputDone := time.Now()
	timer := st.responseTimer(received)
	emptyFinal, _ := req.Parameters.Bool(oip.ParamTritonEnableEmptyFinalResponse)
	sentFinal := false
	err = d.InferStream(sc.ctx, inputs, req.Parameters, func(outs []tensor.Tensor, final bool) error {
		resp, err := response(&md, labelsOf(m), version, req, outs)
		if err != nil {
			return err
		}
		sentFinal = final
		return emit(resp, final, &timer)
	})
	inferDone := time.Now()
	if err == nil && !sentFinal && emptyFinal {
		// Triton's empty final response: no outputs, only the flag.
		err = emit(&oip.InferResponse{Model: md.Name, Version: version, ID: req.ID}, true, nil)
	}
	if err != nil {
		st.failed(time.Since(received))
		return version, fmt.Errorf("model %q: %w", md.Name, err)
	}
	st.succeeded(received, queued, inputDone, inferDone, time.Now())
	return version, nil
}
