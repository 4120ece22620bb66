package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/client"
)

// A tally is what one shard recorded during one interval.
//
// Histogram membership: response, service and send lag hold every request
// that succeeded or timed out. A timeout is a right-censored sample — the
// true latency is at least what was measured — so it stays in the
// distribution (recorded at its elapsed time, which is >= the timeout)
// instead of vanishing from it; reports mark percentiles at or above the
// timeout as lower bounds. Requests that failed with an answer (an HTTP
// error status, a gRPC code, a transport or validation failure) are counted
// by code and their response times go to the separate failed histogram, so
// that fast errors cannot make the latency of good requests look better.
type tally struct {
	response *hdr.Histogram // completion − intended start
	service  *hdr.Histogram // completion − actual send
	lag      *hdr.Histogram // actual send − intended start
	failed   *hdr.Histogram // completion − intended start, failed requests; nil until one fails
	ok       int64
	timeouts int64
	errors   int64
	clamped  int64 // values above the histogram range, recorded as its maximum
	// stream is nil unless the run streams (Config.Streaming).
	stream *streamTally
	codes  map[errorKey]int64
	// samples holds the first MaxErrorSamples distinct messages of each
	// error class (timeouts included).
	samples map[errorKey][]string
}

func newTally(streaming bool) *tally {
	t := &tally{
		response: newHist(), service: newHist(), lag: newHist(),
		codes: make(map[errorKey]int64), samples: make(map[errorKey][]string),
	}
	if streaming {
		t.stream = newStreamTally()
	}
	return t
}

// failedHist is the failed histogram, made at the first failure: most runs
// have none, and a dense histogram is 270 KB in every tally.
func (t *tally) failedHist() *hdr.Histogram {
	if t.failed == nil {
		t.failed = newHist()
	}
	return t.failed
}

func (t *tally) reset() {
	t.response.Reset()
	t.service.Reset()
	t.lag.Reset()
	if t.failed != nil {
		t.failed.Reset()
	}
	if t.stream != nil {
		t.stream.reset()
	}
	t.ok, t.timeouts, t.errors, t.clamped = 0, 0, 0, 0
	clear(t.codes)
	clear(t.samples)
}

// add merges o into t and returns how many histogram values were dropped by
// Merge (which cannot happen between tallies of the same geometry, but is
// checked rather than assumed).
func (t *tally) add(o *tally) (dropped int64) {
	dropped += t.response.Merge(o.response)
	dropped += t.service.Merge(o.service)
	dropped += t.lag.Merge(o.lag)
	if o.failed != nil {
		dropped += t.failedHist().Merge(o.failed)
	}
	if t.stream != nil && o.stream != nil {
		dropped += t.stream.add(o.stream)
	}
	t.ok += o.ok
	t.timeouts += o.timeouts
	t.errors += o.errors
	t.clamped += o.clamped
	for k, v := range o.codes {
		t.codes[k] += v
	}
	for k, msgs := range o.samples {
		for _, m := range msgs {
			t.samples[k] = addSample(t.samples[k], m)
		}
	}
	return dropped
}

// addSample appends msg to samples unless it is there already or samples
// is full.
func addSample(samples []string, msg string) []string {
	if len(samples) >= MaxErrorSamples || slices.Contains(samples, msg) {
		return samples
	}
	return append(samples, msg)
}

// sampleOf is an error's message as kept in a result: one line, at most
// MaxErrorMessage bytes (a hostile server chooses what goes in it).
func sampleOf(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > MaxErrorMessage {
		cut := MaxErrorMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// A shard is the recorder of a group of workers: the hot path takes its
// uncontended mutex, and the interval collector takes it once per interval
// to swap the tally. Workers are spread over a few shards rather than given
// a recorder each because an open-loop run may grow thousands of workers,
// and a tally is 0.8 MB of dense histograms (1.1 MB once a request failed).
type shard struct {
	mu  sync.Mutex
	cur *tally
	_   [64]byte
}

func newShards(n int, streaming bool) []*shard {
	s := make([]*shard, n)
	for i := range s {
		s[i] = &shard{cur: newTally(streaming)}
	}
	return s
}

// shardCount is how many shards the run records into. Workers use two per
// CPU, which keeps the mutexes uncontended (a record holds one for ~30 ns),
// capped at 16 to bound memory at about 18 MB on big machines. A closed
// loop on event loops uses one per loop: no other shard would record, and
// each costs a tally.
func (r *runner) shardCount() int {
	n := r.workers()
	shards := max(1, min(n, 2*runtime.GOMAXPROCS(0), 16))
	if _, ok := r.loopTarget(); ok {
		shards = min(shards, loopCount(n))
	}
	return shards
}

// record accounts for one finished request; times are monotonic nanoseconds.
// It does not allocate for successful requests, nor for failed ones once
// their class has its samples and the tally its failed histogram.
func (s *shard) record(due, sent, done int64, err error) {
	var key errorKey
	if err != nil {
		key = classify(err)
	}
	s.mu.Lock()
	s.cur.recordLocked(key, due, sent, done, err)
	s.mu.Unlock()
}

// recordLocked is record with the shard's lock held and err classified.
func (t *tally) recordLocked(key errorKey, due, sent, done int64, err error) {
	switch {
	case err == nil || key.kind == kindTimeout:
		if err == nil {
			t.ok++
		} else {
			t.timeouts++
			if len(t.samples[key]) < MaxErrorSamples {
				t.samples[key] = addSample(t.samples[key], sampleOf(err))
			}
		}
		t.clamped += recordClamped(t.response, done-due)
		t.clamped += recordClamped(t.service, done-sent)
		t.clamped += recordClamped(t.lag, sent-due)
	default:
		t.errors++
		t.codes[key]++
		if len(t.samples[key]) < MaxErrorSamples {
			t.samples[key] = addSample(t.samples[key], sampleOf(err))
		}
		t.clamped += recordClamped(t.failedHist(), done-due)
		t.clamped += recordClamped(t.lag, sent-due)
	}
}

// swap starts fresh, an empty tally, as the shard's current one and hands
// the one it replaces to the caller. The collector keeps one spare tally
// for all its shards: it swaps it into a shard, merges and resets what came
// out, and uses that for the next shard.
func (s *shard) swap(fresh *tally) *tally {
	s.mu.Lock()
	old := s.cur
	s.cur = fresh
	s.mu.Unlock()
	return old
}

// clear throws away what the shard recorded (the warm-up's).
func (s *shard) clear() {
	s.mu.Lock()
	s.cur.reset()
	s.mu.Unlock()
}

// errorKind is the class of a failed request.
type errorKind uint8

const (
	kindOther      errorKind = iota
	kindTimeout              // the per-request timeout expired
	kindHTTP                 // an HTTP status outside 2xx
	kindGRPC                 // a gRPC status other than OK
	kindTransport            // no answer: connection refused, reset, ...
	kindValidation           // the answer did not match the expected outputs
	kindStream               // a streamed request failed in the stream (error_message, an SSE error event)
	kindRefused              // not taken: no connection could be made, or the server said it did not process it
)

// errorKey identifies a failure class in the errors-by-code table; it is
// comparable and built without allocating so the map update is cheap.
type errorKey struct {
	kind errorKind
	code int32
}

// String is the key used in results: "http_503", "grpc_Unavailable",
// "timeout", "refused", "transport", "validation", "stream_error" or "other".
func (k errorKey) String() string {
	switch k.kind {
	case kindTimeout:
		return "timeout"
	case kindHTTP:
		return fmt.Sprintf("http_%d", k.code)
	case kindGRPC:
		return "grpc_" + codes.Code(k.code).String()
	case kindRefused:
		return "refused"
	case kindTransport:
		return "transport"
	case kindValidation:
		return "validation"
	case kindStream:
		return "stream_error"
	}
	return "other"
}

// ValidationError reports a response whose outputs differ from the expected
// ones.
type ValidationError struct {
	Detail string
}

func (e *ValidationError) Error() string { return "validation: " + e.Detail }

// HTTPStatusError is a REST answer with a status outside 2xx.
type HTTPStatusError struct {
	Status int
}

func (e *HTTPStatusError) Error() string { return fmt.Sprintf("HTTP %d", e.Status) }

// classify maps a request's error to its class. Timeouts are recognised by
// the context's DeadlineExceeded (the client wraps it for REST and gRPC), by
// gRPC DEADLINE_EXCEEDED and by net timeouts.
func classify(err error) errorKey {
	var hs *HTTPStatusError
	if errors.As(err, &hs) {
		return errorKey{kindHTTP, int32(hs.Status)}
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return errorKey{kind: kindValidation}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errorKey{kind: kindTimeout}
	}
	if errors.Is(err, client.ErrStreamRequest) || errors.Is(err, client.ErrStreamEvent) {
		return errorKey{kind: kindStream}
	}
	// Refused requests are told apart from lost ones (a transport error
	// once the request went out): a server shutting down refuses new
	// connections (or resets those it had not accepted) and, over gRPC,
	// says which calls it did not process; none was run, so another server
	// may take them.
	var oe *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, client.ErrNotProcessed) ||
		errors.As(err, &oe) && oe.Op == "dial" && !oe.Timeout() {
		return errorKey{kind: kindRefused}
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		switch {
		case ce.HTTPStatus != 0:
			return errorKey{kindHTTP, int32(ce.HTTPStatus)}
		case ce.GRPCCode == codes.DeadlineExceeded:
			return errorKey{kind: kindTimeout}
		case ce.GRPCCode != codes.OK:
			return errorKey{kindGRPC, int32(ce.GRPCCode)}
		}
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		if st.Code() == codes.DeadlineExceeded {
			return errorKey{kind: kindTimeout}
		}
		return errorKey{kindGRPC, int32(st.Code())}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errorKey{kind: kindTimeout}
	}
	if ce != nil {
		return errorKey{kind: kindTransport}
	}
	return errorKey{kind: kindOther}
}

// ErrorClass is the key of Result.Errors that a request failing with err is
// counted under ("http_503", "timeout", "validation", …): how the engine
// classifies what a Target returns.
func ErrorClass(err error) string { return classify(err).String() }
