package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/oipkit/oipkit/internal/envswitch"
)

// The event loop: REST requests of a closed loop sent on many keep-alive
// connections by one goroutine waiting on epoll, the way wrk does, instead
// of a goroutine per connection parked in Go's netpoller. A request in
// flight then costs its connection and a few hundred bytes of state, not a
// goroutine stack and a pooled read buffer; and an answer costs one read and
// no goroutine switch.
//
// The loop reads the common answer itself: a head of at most
// http1BufferSize bytes and a body framed by Content-Length (or none, for
// 204 and 304). Its head is parsed by the same code as the blocking path's
// (readHead), and its body is counted, kept or dropped as readBody does.
// Every other answer — chunked, ending with the connection, a longer head —
// falls back to the blocking path: a goroutine reads the whole answer again
// from its first byte with http1Conn.answer, then gives the connection back
// to the loop. FuzzLoopAnswer holds the loop's verdicts to the blocking
// path's (itself fuzzed against net/http) whatever the reads' sizes.
// OIPKIT_EVENT_LOOP=off turns the loop off: every request then goes through
// PreparedInfer.Send on a goroutine of its own.

// EnvEventLoop names the environment variable that turns the event loop
// off for the process (off, 0, false or no).
const EnvEventLoop = "OIPKIT_EVENT_LOOP"

var loopOn = envswitch.On(EnvEventLoop)

// EventLoop reports whether REST closed loops may run on the event loop in
// this process.
func EventLoop() bool { return loopOn }

// ErrNoEventLoop is returned by REST.Loop when the loop cannot run: the
// switch is off, the client speaks https, the system has no epoll, or the
// client has fewer connections than the loop asks for. The caller sends its
// requests with PreparedInfer.Send instead.
var ErrNoEventLoop = errors.New("the event loop is not available")

// A LoopDriver says what a REST event loop sends and takes its answers.
// Slots are numbered 0..n-1; each has at most one request in flight, and
// its Next is called again only after its Done. Both are called on the
// loop's goroutine, so they must not block.
type LoopDriver interface {
	// Next returns the request slot sends next and how much of its answer
	// to keep, as PreparedInfer.Send's keep; ok false retires the slot.
	// The request must come from the REST client running the loop.
	Next(slot int) (p *PreparedInfer, keep int64, ok bool)
	// Done takes the outcome of the slot's request: what PreparedInfer.Send
	// would have returned.
	Done(slot int, a InferAnswer, err error)
}

// Loop sends requests on n keep-alive connections, one in flight on each,
// until the driver retires every slot or ctx ends (requests in flight then
// end with ctx's error). It returns ErrNoEventLoop when it cannot run, and
// otherwise nil: each request's failure goes to Done.
func (c *REST) Loop(ctx context.Context, n int, d LoopDriver) error {
	if !loopOn || c.http1 == nil || n <= 0 {
		return ErrNoEventLoop
	}
	return c.http1.loop(ctx, n, d)
}

// loopAnswer reads one answer from the bytes of successive reads.
type loopAnswer struct {
	keep bool
	max  int64

	acc     []byte // the answer's bytes so far, while its head is incomplete
	budget  int    // header bytes left (heads of interim answers count)
	interim int
	off     int // where the current head starts in the answer's bytes
	scanned int // bytes of the answer already searched for the head's end

	inBody   bool
	a        InferAnswer
	reusable bool
	left     int64 // body bytes still to come
	keepUpTo int64
	kept     []byte
	hlErr    error // the binary header length's error, reported once the body is read
	started  bool  // a byte of the answer came
}

// feedResult says what feed made of the bytes it was given.
type feedResult int

const (
	feedMore     feedResult = iota // the answer is not complete
	feedDone                       // complete: answer and error are set
	feedFallback                   // the blocking path must read it: replay holds its bytes so far
)

func (s *loopAnswer) reset(keep bool, max int64, maxHeader int) {
	acc := s.acc[:0]
	if cap(acc) > 4<<10 {
		acc = nil // a long head's buffer is not kept for every connection
	}
	*s = loopAnswer{keep: keep, max: max, budget: maxHeader, acc: acc}
}

// feed takes the bytes of one read, valid only during the call. p parses
// heads. On feedDone, result returns the outcome; on feedFallback, replay
// returns the answer's bytes so far.
func (s *loopAnswer) feed(p *headParser, b []byte) (feedResult, error) {
	if len(b) > 0 {
		s.started = true
	}
	if s.inBody {
		return s.body(b)
	}
	data := b
	if len(s.acc) > 0 {
		s.acc = append(s.acc, b...)
		data = s.acc
	}
	for {
		head := data[s.off:]
		end := headEnd(head, max(s.scanned-s.off-3, 0))
		if end < 0 {
			s.scanned = len(data)
			if len(head) > 0 && (head[0] == '\r' || head[0] == '\n') || len(data) > http1BufferSize {
				return s.fallback(data), nil // let the blocking path say what is wrong
			}
			if len(s.acc) == 0 {
				s.acc = append(s.acc, data...)
			}
			return feedMore, nil
		}
		status, f, err := p.parse(head[:end], &s.budget)
		if err != nil {
			return feedDone, err
		}
		if status < 200 {
			if status == 101 || s.interim == maxInterimAnswers {
				return feedDone, malformed("unexpected interim answer %d", status)
			}
			s.interim++
			s.off += end
			continue
		}
		s.a.Status = status
		noBody := status == 204 || status == 304
		if !noBody && (f.chunked || f.contentLength < 0) {
			return s.fallback(data), nil
		}
		s.reusable = !f.close
		switch {
		case status > 299:
			s.keepUpTo = maxErrorBody
		case s.keep:
			s.keepUpTo = s.max
		}
		if !noBody {
			if f.contentLength > s.max {
				return feedDone, tooLarge(s.max, "Content-Length %d exceeds %d bytes", f.contentLength, s.max)
			}
			s.left = f.contentLength
			if s.keepUpTo > 0 {
				s.kept = make([]byte, 0, min(f.contentLength, s.keepUpTo))
			}
		}
		s.a.HeaderLen = -1
		if status <= 299 && p.cn.ihclN > 0 {
			s.a.HeaderLen, s.hlErr = p.cn.headerLength(s.left)
		}
		s.inBody = true
		rest := head[end:]
		s.acc = s.acc[:0] // rest may alias it: body copies what it keeps
		return s.body(rest)
	}
}

// body takes body bytes.
func (s *loopAnswer) body(b []byte) (feedResult, error) {
	take := min(int64(len(b)), s.left)
	if k := min(take, s.keepUpTo-int64(len(s.kept))); k > 0 {
		s.kept = append(s.kept, b[:k]...)
	}
	s.left -= take
	s.a.BodyLen += take
	if s.left > 0 {
		return feedMore, nil
	}
	if extra := int64(len(b)) - take; extra > 0 && s.reusable {
		return feedDone, malformed("%d bytes after the end of the %d-byte body", extra, s.a.BodyLen)
	}
	return feedDone, nil
}

// eof ends the answer at the end of the connection (err nil) or at a read
// error.
func (s *loopAnswer) eof(err error) (feedResult, error) {
	switch {
	case err != nil:
		return feedDone, err
	case !s.started:
		return feedDone, io.EOF
	case s.inBody:
		return feedDone, malformed("body ended after %d of %d bytes (Content-Length)", s.a.BodyLen, s.a.BodyLen+s.left)
	}
	// A head cut short: the blocking path says how.
	return s.fallback(s.acc), nil
}

// fallback hands the answer to the blocking path: its bytes so far are
// kept, to be read again from the first.
func (s *loopAnswer) fallback(data []byte) feedResult {
	if len(data) > 0 && (len(s.acc) == 0 || &data[0] != &s.acc[0]) {
		s.acc = append(s.acc[:0], data...)
	}
	return feedFallback
}

// replay is the answer's bytes so far, after feedFallback.
func (s *loopAnswer) replay() []byte { return s.acc }

// result is the outcome of a complete answer read by the loop (feedDone
// with a nil error): as http1Client.send returns it, and whether the
// connection may carry another request.
func (s *loopAnswer) result() (InferAnswer, bool, error) {
	if s.a.Status > 299 {
		return InferAnswer{}, s.reusable, statusError("Infer", &RawResponse{Status: s.a.Status, Body: s.kept})
	}
	if s.hlErr != nil {
		return InferAnswer{}, false, &Error{Op: "Infer", Err: s.hlErr}
	}
	a := s.a
	a.Body = s.kept
	return a, s.reusable, nil
}

// headEnd returns the length of the head at the start of b, its empty line
// included, or -1 when b holds no empty line yet. It searches from from: a
// head trickling in a byte at a time is not searched again from its start.
func headEnd(b []byte, from int) int {
	for i := from; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		switch {
		case i < len(b) && b[i] == '\n':
			return i + 1
		case i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n':
			return i + 2
		case i+1 >= len(b):
			return -1
		}
	}
}

// headParser parses complete heads with the blocking path's readHead.
type headParser struct {
	cn http1Conn
	r  bytes.Reader
}

func newHeadParser(maxHeader int) *headParser {
	p := &headParser{}
	p.cn.maxHeader = maxHeader
	p.cn.br = bufio.NewReaderSize(&p.r, http1BufferSize)
	return p
}

// parse parses one head, its empty line included.
func (p *headParser) parse(head []byte, budget *int) (int, framing, error) {
	p.r.Reset(head)
	p.cn.br.Reset(&p.r)
	status, f, err := p.cn.readHead(budget)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = malformed("head of %d bytes cut short", len(head))
	}
	return status, f, err
}
