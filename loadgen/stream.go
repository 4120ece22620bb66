package loadgen

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// StreamConfig turns a run into a streaming one (`--streaming`, as
// perf_analyzer names it): every request is answered by a stream of
// responses, over gRPC ModelStreamInfer or REST generate_stream
// (server-sent events), and the run records each request's time to first
// response, every gap between two responses of a request and the number of
// responses, beside the response time (which is then the time to the last
// response).
type StreamConfig struct {
	// Responses completes a request after this many responses on a server
	// that does not mark the last one with triton_final_response (0: a
	// response without the flag completes its request, as a non-decoupled
	// model's single response does). gRPC only.
	Responses int `json:"responses,omitempty"`
	// TextInput is the prompt of REST generate_stream requests (default
	// DefaultPrompt).
	TextInput string `json:"textInput,omitempty"`
	// Shape is the message shape of the server's ModelStreamInfer answers
	// (`--stream-shape`): triton (ModelStreamInferResponse), mlserver
	// (plain ModelInferResponse, one stream per request) or auto (""),
	// which picks from the server's metadata. gRPC only.
	Shape client.StreamShape `json:"shape,omitempty"`
}

// DefaultPrompt is the text_input of REST streaming requests without
// --text-input.
const DefaultPrompt = "The quick brown fox jumps over the lazy dog"

func (c *Config) normalizeStreaming() error {
	s := c.Streaming
	if s == nil {
		for _, e := range append(append([]string(nil), c.Thresholds...), c.SLO...) {
			if t, err := ParseThreshold(e); err == nil && (t.hist == "first_response" || t.hist == "inter_response") {
				return configErr("threshold %s: %s_ metrics need --streaming", t.Text, t.hist)
			}
		}
		return nil
	}
	switch {
	case s.Responses < 0:
		return configErr("--stream-responses must be at least 0, got %d", s.Responses)
	case c.Inputs.Validate:
		return configErr("--validate does not apply to --streaming: a stream's responses are counted and timed, not compared")
	case c.Target.Protocol == client.ProtocolHTTPBinary:
		return configErr("--streaming over REST uses generate_stream, whose requests are JSON: use --protocol http")
	case c.Target.Protocol.IsGRPC() && s.TextInput != "":
		return configErr("--text-input is the prompt of REST generate_stream: over gRPC give the inputs with --input-data or --data")
	case !c.Target.Protocol.IsGRPC() && s.Responses > 0:
		return configErr("--stream-responses applies to gRPC streams; a generate_stream request ends with its event stream")
	case !c.Target.Protocol.IsGRPC() && c.Inputs.File != "":
		return configErr("--input-data does not apply to REST streaming: generate_stream takes a prompt, --text-input")
	}
	shape, err := client.ParseStreamShape(string(s.Shape))
	if err != nil {
		return configErr("--stream-shape: %v", err)
	}
	if !c.Target.Protocol.IsGRPC() && shape != client.StreamShapeAuto {
		return configErr("--stream-shape applies to gRPC ModelStreamInfer; REST streaming is generate_stream")
	}
	if shape == client.StreamShapeAuto {
		shape = ""
	}
	s.Shape = shape
	if !c.Target.Protocol.IsGRPC() && s.TextInput == "" {
		s.TextInput = DefaultPrompt
	}
	return nil
}

// A StreamTarget sends requests whose answers are streams of responses. A
// runner of a streaming configuration calls DoStream instead of Do.
// DoStream calls rec.Response as each response arrives (not for per-request
// errors nor for an empty final marker) and returns when the request is
// complete, with nil or an error [classify] understands. It is called
// concurrently, each call with its own recorder.
type StreamTarget interface {
	Target
	DoStream(ctx context.Context, seq uint64, rec *StreamRecorder) error
}

// StreamRecorder times the responses of one streamed request. A worker
// owns one and reuses it for each of its requests; Response does not
// allocate.
type StreamRecorder struct {
	r           *runner
	sh          *shard
	first, last int64 // runner clock of the first and the latest response
	n           int64
	discard     bool // an unrecorded request (ending a sequence)
}

// Response records the arrival of one response of the current request:
// the first sets the time to first response, every later one records its
// gap to the previous one in the shard's inter-response histogram at once
// (a request may stream for longer than an interval).
func (s *StreamRecorder) Response() {
	now := s.r.now()
	if s.n == 0 {
		s.first = now
	} else if !s.discard {
		s.sh.recordGap(now - s.last)
	}
	s.last = now
	s.n++
}

// Responses is how many responses the current request received so far.
func (s *StreamRecorder) Responses() int64 { return s.n }

// doStream is do for a streaming target.
func (r *runner) doStream(ctx context.Context, sh *shard, rec *StreamRecorder, seq uint64, due int64) {
	rec.n = 0
	r.inflight.Add(1)
	sent := r.now()
	err := r.streamer.DoStream(ctx, seq, rec)
	done := r.now()
	r.inflight.Add(-1)
	if err != nil && ctx.Err() != nil {
		return
	}
	sh.recordStream(due, sent, done, err, rec.n, rec.first)
}

// streamTally is a tally's part of a streaming run.
type streamTally struct {
	first      *hdr.Histogram // first response − intended start
	gap        *hdr.Histogram // between consecutive responses of a request
	perRequest *hdr.Histogram // responses per completed request (a count)
	responses  int64
}

func newStreamTally() *streamTally {
	return &streamTally{first: newHist(), gap: newHist(), perRequest: newHist()}
}

func (t *streamTally) reset() {
	t.first.Reset()
	t.gap.Reset()
	t.perRequest.Reset()
	t.responses = 0
}

func (t *streamTally) add(o *streamTally) (dropped int64) {
	t.responses += o.responses
	return t.first.Merge(o.first) + t.gap.Merge(o.gap) + t.perRequest.Merge(o.perRequest)
}

// recordGap records one inter-response gap.
func (s *shard) recordGap(gap int64) {
	s.mu.Lock()
	s.cur.clamped += recordClamped(s.cur.stream.gap, gap)
	s.mu.Unlock()
}

// recordStream accounts for one finished streamed request that received n
// responses, the first at first. The time to first response is recorded
// for requests that succeeded or timed out, like the response time.
func (s *shard) recordStream(due, sent, done int64, err error, n, first int64) {
	var key errorKey
	if err != nil {
		key = classify(err)
	}
	s.mu.Lock()
	t := s.cur
	t.recordLocked(key, due, sent, done, err)
	st := t.stream
	st.responses += n
	t.clamped += recordClamped(st.perRequest, n)
	if n > 0 && (err == nil || key.kind == kindTimeout) {
		t.clamped += recordClamped(st.first, first-due)
	}
	s.mu.Unlock()
}

// streamHistograms copies a stream tally into h.
func (t *streamTally) fill(h *Histograms) (dropped int64) {
	var d [3]int64
	h.FirstResponse, d[0] = histogramOf(t.first)
	h.InterResponse, d[1] = histogramOf(t.gap)
	h.ResponsesPerRequest, d[2] = histogramOf(t.perRequest)
	return d[0] + d[1] + d[2]
}

// --- gRPC ModelStreamInfer ---

const modelStreamInferMethod = inferencepb.GRPCInferenceService_ModelStreamInfer_FullMethodName

var modelStreamInferDesc = grpc.StreamDesc{StreamName: "ModelStreamInfer", ServerStreams: true, ClientStreams: true}

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
func (t *OIPTarget) DoStream(ctx context.Context, seq uint64, rec *StreamRecorder) error {
	if t.rest != nil {
		return t.doSSE(ctx, seq, rec)
	}
	return t.doStream(ctx, seq, nil, rec)
}

// doStream is DoStream over gRPC, of a request of a sequence when step is
// set.
func (t *OIPTarget) doStream(ctx context.Context, seq uint64, step *SequenceStep, rec *StreamRecorder) error {
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
func (t *OIPTarget) streamRequest(s *grpcStream, seq uint64, step *SequenceStep, rec *StreamRecorder) (bool, error) {
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
			err = fmt.Errorf("ModelStreamInfer: request %d not complete within %s after %d responses: %w", seq, timeout, rec.n, context.DeadlineExceeded)
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
func (t *OIPTarget) exchange(s *grpcStream, rec *StreamRecorder) (bool, error) {
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
				if mlserver || rec.n > 0 && !s.msg.finalKnown {
					return false, nil // a server that ends the stream to end the request
				}
				return false, &client.Error{Op: "ModelStreamInfer", Message: fmt.Sprintf("the server ended the stream after %d responses, before the request's final response", rec.n)}
			}
			return false, err
		}
		m := &s.msg
		if mlserver {
			if err := m.scanResponse(s.in.B); err != nil {
				return false, &ValidationError{Detail: "ModelInferResponse (MLServer's stream shape): " + err.Error()}
			}
		} else if err := m.scan(s.in.B); err != nil {
			return false, &ValidationError{Detail: "ModelStreamInferResponse: " + err.Error()}
		}
		if len(m.id) > 0 && string(m.id) != string(s.id) {
			return false, &ValidationError{Detail: fmt.Sprintf("response for request id %.40q on the stream of request %s (one request in flight per stream)", m.id, s.id)}
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
			if want > 0 && rec.n >= want {
				return false, nil
			}
		case want == 0 || rec.n >= want:
			return true, nil
		}
	}
}

// --- REST generate_stream ---

// doSSE posts one generate_stream request and reads its events until the
// stream ends; the timeout covers the whole stream.
func (t *OIPTarget) doSSE(ctx context.Context, seq uint64, rec *StreamRecorder) error {
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
				return fmt.Errorf("generate_stream: request %d not complete within %s after %d events: %w", seq, timeout, rec.n, context.DeadlineExceeded)
			}
			return err
		}
		if r.ID != "" && r.ID != req.ID {
			return &ValidationError{Detail: fmt.Sprintf("generate_stream event for request id %.40q in the answer to request %s", r.ID, req.ID)}
		}
		rec.Response()
	}
}
