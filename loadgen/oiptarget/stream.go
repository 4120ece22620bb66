package oiptarget

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// DefaultPrompt is the text_input of REST streaming requests without
// Streaming.TextInput.
const DefaultPrompt = "The quick brown fox jumps over the lazy dog"

// grpcStream is one ModelStreamInfer stream of the target. It carries one
// request at a time, so its responses need no demultiplexing: the id check
// catches a server that answers the wrong request.
type grpcStream struct {
	cs      grpc.ClientStream
	cancel  context.CancelFunc
	timer   *time.Timer // cancels the stream when a request overruns the timeout
	expired atomic.Bool
	out     client.PreEncoded
	sendBuf []byte
	id      []byte
	in      client.RawMessage
	msg     streamMessage
}

// streamPool holds the idle streams of a target. A stream is taken by one
// request and given back when the request completed cleanly; a stream that
// failed, timed out or was answered out of turn is closed instead, so no
// late response of one request can be taken for another's. There are at
// most as many streams as requests in flight (workers).
type streamPool struct {
	mu     sync.Mutex
	idle   []*grpcStream
	closed bool
}

func (p *streamPool) get() *grpcStream {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return s
	}
	return nil
}

func (p *streamPool) put(s *grpcStream) {
	p.mu.Lock()
	if !p.closed {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	s.close()
}

func (p *streamPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, s := range idle {
		s.close()
	}
}

func (s *grpcStream) close() {
	s.timer.Stop()
	s.cancel()
}

// openStream opens a stream under ctx (the run's: cancelling the run ends
// its streams).
func (t *OIPTarget) openStream(ctx context.Context) (*grpcStream, error) {
	sctx, cancel := context.WithCancel(ctx)
	if t.md != nil {
		sctx = metadata.NewOutgoingContext(sctx, t.md)
	}
	cs, err := t.conn.NewStream(sctx, &modelStreamInferDesc, modelStreamInferMethod, t.callOpts...)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &grpcStream{cs: cs, cancel: cancel}
	s.timer = time.AfterFunc(time.Hour, func() {
		s.expired.Store(true)
		cancel()
	})
	s.timer.Stop()
	s.out.Buf = mem.BufferSlice{nil}
	return s, nil
}

// DoStream sends request seq on a stream and receives its responses until
// the last one: the one with triton_final_response=true, or (without the
// flag) the StreamConfig.Responses-th, or the first. The timeout covers
// the whole request, first response to last. A per-request error
// (error_message) fails the request.
func (t *OIPTarget) DoStream(ctx context.Context, seq uint64, rec *loadgen.StreamRecorder) error {
	if t.rest != nil {
		return t.doSSE(ctx, seq, rec)
	}
	return t.doStream(ctx, seq, nil, rec)
}

// doStream is DoStream over gRPC, of a request of a sequence when step is
// set.
func (t *OIPTarget) doStream(ctx context.Context, seq uint64, step *loadgen.SequenceStep, rec *loadgen.StreamRecorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := t.pool.get()
	if s == nil {
		var err error
		if s, err = t.openStream(ctx); err != nil {
			return err
		}
	}
	reusable, err := t.streamRequest(s, seq, step, rec)
	if reusable {
		t.pool.put(s)
	} else {
		s.close()
	}
	return err
}

// streamRequest runs one request on s and says whether s can carry the
// next one.
func (t *OIPTarget) streamRequest(s *grpcStream, seq uint64, step *loadgen.SequenceStep, rec *loadgen.StreamRecorder) (bool, error) {
	p := &t.payloads[seq%uint64(len(t.payloads))]
	s.id = strconv.AppendUint(s.id[:0], seq, 10)
	s.sendBuf = append(appendRequestID(append(s.sendBuf[:0], p.call.Message()...), s.id), emptyFinalParam...)
	if step != nil {
		s.sendBuf = appendSequenceParams(s.sendBuf, *step)
	}
	// The buffer is rewritten only for the next request, after this one's
	// last response: the server has read it by then.
	s.out.Buf[0] = mem.SliceBuffer(s.sendBuf)
	timeout := t.cfg.Timeout.D()
	s.timer.Reset(timeout)
	reusable, err := t.exchange(s, rec)
	if !s.timer.Stop() || s.expired.Load() {
		reusable = false // the timer cancelled the stream
		if err != nil {
			err = fmt.Errorf("ModelStreamInfer: request %d not complete within %s after %d responses: %w", seq, timeout, rec.Responses(), context.DeadlineExceeded)
		}
	}
	return reusable, err
}

// streamShape is the message shape of the server's ModelStreamInfer
// answers: the configured one, or (auto) the one its metadata names.
func (t *OIPTarget) streamShape() client.StreamShape {
	if t.streaming.Shape != "" {
		return t.streaming.Shape
	}
	return client.StreamShapeOf(&t.info.Server)
}

// exchange sends s.out and reads its responses.
//
// In MLServer's shape a stream carries one request: MLServer hands all the
// requests of a stream to the model named by the first, labels every
// response with the first request's id and marks no response as the last,
// but ends the stream once the client half-closed and the model answered.
// So the request is sent, the stream half-closed, and its end (or the
// StreamConfig.Responses-th response) completes the request.
func (t *OIPTarget) exchange(s *grpcStream, rec *loadgen.StreamRecorder) (bool, error) {
	mlserver := t.streamShape() == client.StreamShapeMLServer
	if err := s.cs.SendMsg(&s.out); err != nil {
		if err == io.EOF { // the stream is gone; RecvMsg has its status
			err = s.cs.RecvMsg(&s.in)
			if err == nil || err == io.EOF {
				err = &client.Error{Op: "ModelStreamInfer", Message: "the server ended the stream"}
			}
		}
		return false, err
	}
	if mlserver {
		if err := s.cs.CloseSend(); err != nil {
			return false, err
		}
	}
	want := int64(t.streaming.Responses)
	for {
		if err := s.cs.RecvMsg(&s.in); err != nil {
			if err == io.EOF {
				if mlserver || rec.Responses() > 0 && !s.msg.finalKnown {
					return false, nil // a server that ends the stream to end the request
				}
				return false, &client.Error{Op: "ModelStreamInfer", Message: fmt.Sprintf("the server ended the stream after %d responses, before the request's final response", rec.Responses())}
			}
			return false, err
		}
		m := &s.msg
		if mlserver {
			if err := m.scanResponse(s.in.B); err != nil {
				return false, &loadgen.ValidationError{Detail: "ModelInferResponse (MLServer's stream shape): " + err.Error()}
			}
		} else if err := m.scan(s.in.B); err != nil {
			return false, &loadgen.ValidationError{Detail: "ModelStreamInferResponse: " + err.Error()}
		}
		if len(m.id) > 0 && string(m.id) != string(s.id) {
			return false, &loadgen.ValidationError{Detail: fmt.Sprintf("response for request id %.40q on the stream of request %s (one request in flight per stream)", m.id, s.id)}
		}
		if len(m.errMsg) > 0 {
			// The server may still answer the failed request; the
			// stream is not reused so that nothing late is miscounted.
			return false, fmt.Errorf("ModelStreamInfer: %w: %s", client.ErrStreamRequest, m.errMsg)
		}
		if m.outputs || !m.final {
			rec.Response() // an empty final response is only a marker
		}
		switch {
		case m.finalKnown:
			if m.final {
				return !mlserver, nil
			}
		case mlserver:
			if want > 0 && rec.Responses() >= want {
				return false, nil
			}
		case want == 0 || rec.Responses() >= want:
			return true, nil
		}
	}
}

// doSSE posts one generate_stream request and reads its events until the
// stream ends; the timeout covers the whole stream.
func (t *OIPTarget) doSSE(ctx context.Context, seq uint64, rec *loadgen.StreamRecorder) error {
	timeout := t.cfg.Timeout.D()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := client.GenerateRequest{Model: t.cfg.Model, Version: t.cfg.ModelVersion, ID: strconv.FormatUint(seq, 10),
		TextInput: t.streaming.TextInput, Parameters: t.params}
	gs, err := t.rest.GenerateStream(cctx, req)
	if err != nil {
		return err
	}
	defer gs.Close()
	for {
		r, err := gs.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				return fmt.Errorf("generate_stream: request %d not complete within %s after %d events: %w", seq, timeout, rec.Responses(), context.DeadlineExceeded)
			}
			return err
		}
		if r.ID != "" && r.ID != req.ID {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("generate_stream event for request id %.40q in the answer to request %s", r.ID, req.ID)}
		}
		rec.Response()
	}
}

const modelStreamInferMethod = inferencepb.GRPCInferenceService_ModelStreamInfer_FullMethodName

var modelStreamInferDesc = grpc.StreamDesc{StreamName: "ModelStreamInfer", ServerStreams: true, ClientStreams: true}
