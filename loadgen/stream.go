package loadgen

import (
	"context"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/oipkit/oipkit/client"
)

// StreamConfig turns a run into a streaming one (Config.Streaming, as
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
	// oiptarget.DefaultPrompt).
	TextInput string `json:"textInput,omitempty"`
	// Shape is the message shape of the server's ModelStreamInfer answers
	// (Streaming.Shape): triton (ModelStreamInferResponse), mlserver
	// (plain ModelInferResponse, one stream per request) or auto (""),
	// which picks from the server's metadata. gRPC only.
	Shape client.StreamShape `json:"shape,omitempty"`
}

func (c *Config) normalizeStreaming() error {
	s := c.Streaming
	if s == nil {
		for _, t := range append(append([]Threshold(nil), c.Thresholds...), c.SLO...) {
			if t.hist == "first_response" || t.hist == "inter_response" {
				return configErr("threshold %s: %s_ metrics need Config.Streaming", t.Text, t.hist)
			}
		}
		return nil
	}
	return nil
}

// A StreamTarget sends requests whose answers are streams of responses. A
// runner of a streaming configuration calls DoStream instead of Do.
// DoStream calls rec.Response as each response arrives (not for per-request
// errors nor for an empty final marker) and returns when the request is
// complete, with nil or an error the engine classifies ([ErrorClass]). It is called
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
	if s.r == nil { // a standalone recorder only counts
		s.n++
		return
	}
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

// NewStreamRecorder returns a recorder outside any run, which only counts
// responses: for driving a StreamTarget in its own tests and benchmarks.
// Reset starts the count of the next request.
func NewStreamRecorder() *StreamRecorder { return &StreamRecorder{discard: true} }

// Reset starts a new request: no responses yet.
func (s *StreamRecorder) Reset() { s.n = 0 }

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

// --- REST generate_stream ---
