package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oipkit/oipkit/internal/httpfield"
	"github.com/oipkit/oipkit/internal/rawtcp"
)

// http1Client sends PreparedInfer requests over plain HTTP/1.1 keep-alive
// connections, the way wrk does: one write of the serialized request, then
// the answer read and checked on the caller's goroutine through a buffered
// reader, with nothing allocated per request unless the body is kept.
//
// A connection over the raw-syscall layer holds no read buffer while it
// waits for an answer: it waits for readability without one
// (rawtcp.Conn.WaitRead) and then takes a buffer from a pool for the
// answer, so thousands of requests in flight cost their connections and
// goroutines, not 16 KiB each (OIPKIT_LEAN_READS=off keeps a buffer per
// connection, as over plain sockets).
//
// Every read is bounded: the connection's deadline is the call's (timeout or
// the context's deadline, whichever is first), header bytes are capped, and
// bodies beyond Options.MaxResponseBytes are refused; bodies that are not
// kept are read through the connection's buffer and dropped.
type http1Client struct {
	addr      string // host:port
	timeout   time.Duration
	maxHeader int // Options.MaxHeaderBytes
	dialer    net.Dialer

	// slots holds one token per connection in use (sending or being
	// dialled), so at most cap(slots) connections exist.
	slots  chan struct{}
	dials  chan struct{} // one token per connection being made (connect)
	mu     sync.Mutex
	idle   []*http1Conn
	closed bool
	// spare holds the buffers of dropped connections for new ones, so that
	// a server that makes every answer fail (and every connection close)
	// does not make each new connection allocate them again.
	spare []spareBuffers
	// loopIdle holds the event loop's healthy connections between loops
	// (loop_linux.go): file descriptors outside Go's poller.
	loopIdle []int
}

type spareBuffers struct {
	br      *bufio.Reader
	scratch []byte
}

// Limits of the HTTP/1.1 reader.
const (
	http1BufferSize   = 16 << 10
	maxKeptLine       = 16 << 10 // bytes kept of a longer header line; the rest is read and dropped
	maxInterimAnswers = 8        // 1xx answers before the final one
	maxScratch        = 4 << 20  // a connection's scratch buffer is dropped when larger
	maxDials          = 256      // connections being made at once; a loopback connect takes tens of µs
)

func newHTTP1(addr string, opts Options) *http1Client {
	return &http1Client{
		addr:      addr,
		timeout:   opts.Timeout,
		maxHeader: int(min(opts.MaxHeaderBytes, math.MaxInt32)),
		dialer:    net.Dialer{KeepAlive: 30 * time.Second},
		slots:     make(chan struct{}, opts.Connections),
		dials:     make(chan struct{}, maxDials),
	}
}

// http1Conn is one keep-alive connection.
type http1Conn struct {
	nc net.Conn
	// br reads the answer. With raw set it is taken from readerPool for one
	// answer and given back after it (nil in between); otherwise it is the
	// connection's own.
	br        *bufio.Reader
	raw       *rawtcp.Conn
	reused    bool   // it carried a request before
	maxHeader int    // bytes of status line and headers, 1xx answers included
	line      []byte // header lines longer than br's buffer are assembled here, up to maxKeptLine
	cut       bool   // the last line read was longer than maxKeptLine: its tail was dropped
	scratch   []byte // bodies of unknown length to keep are gathered here
	crlf      bool   // the last line read ended with CRLF, not a bare LF

	// watched is the context whose end aborts I/O on the connection; it is
	// registered once per context, not per request (a load generator's
	// workers send every request under the run's context).
	watched   context.Context
	stopWatch func() bool
	aborted   atomic.Bool

	ihcl    [32]byte // the first Inference-Header-Content-Length value
	ihclLen int      // its length (may exceed len(ihcl): then it is cut)
	ihclN   int      // how many times the header came
}

// aLongTimeAgo is a deadline in the past: it makes pending I/O fail at once.
var aLongTimeAgo = time.Unix(1, 0)

func (cn *http1Conn) abort() {
	cn.aborted.Store(true)
	cn.nc.SetDeadline(aLongTimeAgo)
}

// watch makes the end of ctx abort the connection's I/O. It reports false
// when an earlier context's abort may already be under way: the
// connection must not be used.
func (cn *http1Conn) watch(ctx context.Context) bool {
	if cn.watched == ctx {
		return !cn.aborted.Load()
	}
	if cn.stopWatch != nil && !cn.stopWatch() {
		return false
	}
	cn.watched, cn.stopWatch = ctx, nil
	if ctx.Done() != nil {
		cn.stopWatch = context.AfterFunc(ctx, cn.abort)
	}
	return !cn.aborted.Load()
}

func (cn *http1Conn) close() {
	if cn.stopWatch != nil {
		cn.stopWatch()
	}
	cn.nc.Close()
}

// get returns a connection for a request due by deadline: an idle one, or a
// new one while fewer than Connections exist, or the next one freed.
func (h *http1Client) get(ctx context.Context, deadline time.Time, fresh bool) (*http1Conn, error) {
	select {
	case h.slots <- struct{}{}:
	default:
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case h.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, fmt.Errorf("all %d connections stayed busy: %w", cap(h.slots), os.ErrDeadlineExceeded)
		}
	}
	for !fresh {
		h.mu.Lock()
		var cn *http1Conn
		if n := len(h.idle); n > 0 {
			cn = h.idle[n-1]
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
		}
		h.mu.Unlock()
		if cn == nil {
			break
		}
		if cn.watch(ctx) {
			return cn, nil
		}
		cn.close()
	}
	cn, err := h.connect(ctx, deadline)
	if err != nil {
		<-h.slots
		return nil, err
	}
	return cn, nil
}

// connect makes a new connection on a goroutine of its own: dialling runs
// deep (resolver, socket set-up, timers) and would grow the caller's stack
// to 8 KiB for good — a load generator's worker, which then waits on the
// connection for as long as the server takes, beside thousands of others.
// At most maxDials are made at once, so that thousands of workers starting
// together do not hold thousands of such stacks at the same time.
func (h *http1Client) connect(ctx context.Context, deadline time.Time) (*http1Conn, error) {
	type made struct {
		cn  *http1Conn
		err error
	}
	select {
	case h.dials <- struct{}{}:
	default:
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case h.dials <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, fmt.Errorf("waited for one of %d connections being made: %w", cap(h.dials), os.ErrDeadlineExceeded)
		}
	}
	done := make(chan made, 1)
	go func() {
		cn, err := h.newConn(ctx, deadline)
		<-h.dials
		done <- made{cn, err}
	}()
	m := <-done
	return m.cn, m.err
}

// newConn dials a connection and sets it up for its first request.
func (h *http1Client) newConn(ctx context.Context, deadline time.Time) (*http1Conn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := h.dialer.DialContext(dctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	nc = rawtcp.Wrap(nc)
	cn := &http1Conn{nc: nc, maxHeader: h.maxHeader}
	if raw, ok := nc.(*rawtcp.Conn); ok && leanReads {
		cn.raw = raw // no buffer of its own
	} else {
		h.mu.Lock()
		if n := len(h.spare); n > 0 {
			cn.br, cn.scratch = h.spare[n-1].br, h.spare[n-1].scratch
			h.spare[n-1] = spareBuffers{}
			h.spare = h.spare[:n-1]
		}
		h.mu.Unlock()
		if cn.br == nil {
			cn.br = bufio.NewReaderSize(nc, http1BufferSize)
		} else {
			cn.br.Reset(nc)
		}
	}
	if !cn.watch(ctx) {
		cn.close()
		return nil, ctx.Err()
	}
	return cn, nil
}

// put returns a healthy connection to the pool.
func (h *http1Client) put(cn *http1Conn) {
	cn.reused = true
	h.mu.Lock()
	if h.closed {
		cn.close()
	} else {
		h.idle = append(h.idle, cn)
	}
	h.mu.Unlock()
	<-h.slots
}

// drop closes a connection that must not be reused.
func (h *http1Client) drop(cn *http1Conn) {
	cn.close()
	if cn.raw != nil {
		<-h.slots
		return
	}
	h.mu.Lock()
	if len(h.spare) < cap(h.slots) {
		cn.br.Reset(nil)
		h.spare = append(h.spare, spareBuffers{cn.br, cn.scratch})
	}
	h.mu.Unlock()
	<-h.slots
}

// closeIdle closes idle connections; later ones are closed when returned.
func (h *http1Client) closeIdle() {
	h.mu.Lock()
	h.closed = true
	for _, cn := range h.idle {
		cn.close()
	}
	for _, fd := range h.loopIdle {
		closeFD(fd)
	}
	h.loopIdle = nil
	h.idle = nil
	h.mu.Unlock()
}

// send is PreparedInfer.Send over HTTP/1.1.
func (h *http1Client) send(ctx context.Context, wire []byte, keep bool, max int64) (InferAnswer, error) {
	const op = "Infer"
	if err := ctx.Err(); err != nil {
		return InferAnswer{}, &Error{Op: op, Err: err}
	}
	start := time.Now()
	deadline := start.Add(h.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for attempt := 0; ; attempt++ {
		cn, err := h.get(ctx, deadline, attempt > 0)
		if err != nil {
			return InferAnswer{}, h.fail(ctx, op, start, deadline, err)
		}
		reused := cn.reused
		// The request is written and waited for in a frame of its own, the
		// answer read in another: see request.
		var a InferAnswer
		var errBody []byte
		var started, reusable bool
		if err = cn.request(wire, deadline); err == nil {
			a, errBody, started, reusable, err = cn.answer(keep, max)
		}
		cn.release()
		if reusable && err == nil {
			h.put(cn)
		} else {
			h.drop(cn)
		}
		if err != nil {
			// A keep-alive connection the server closed while it was idle
			// fails before any answer: send once more on a new connection,
			// as net/http does.
			if attempt == 0 && reused && !started && staleConn(err) && ctx.Err() == nil {
				continue
			}
			return InferAnswer{}, h.fail(ctx, op, start, deadline, err)
		}
		if a.Status < 200 || a.Status > 299 {
			return InferAnswer{}, statusError(op, &RawResponse{Status: a.Status, Body: errBody})
		}
		return a, nil
	}
}

// fail turns a transport error into an *Error; the end of the call's time
// wraps context.DeadlineExceeded, the end of ctx wraps ctx.Err().
func (h *http1Client) fail(ctx context.Context, op string, start, deadline time.Time, err error) error {
	if ce, ok := err.(*Error); ok {
		return ce
	}
	if cerr := ctx.Err(); cerr != nil {
		return &Error{Op: op, Err: fmt.Errorf("%w: %w", cerr, err)}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &Error{Op: op, Err: fmt.Errorf("%w: no complete answer within %v: %w",
			context.DeadlineExceeded, deadline.Sub(start).Round(time.Millisecond), err)}
	}
	return &Error{Op: op, Err: err}
}

// malformed is an *Error wrapping ErrMalformedResponse.
func malformed(format string, args ...any) error {
	return &Error{Op: "Infer", Err: fmt.Errorf("%w: "+format, append([]any{ErrMalformedResponse}, args...)...)}
}

// tooLarge is an *Error wrapping ErrResponseTooLarge.
func tooLarge(max int64, format string, args ...any) error {
	return &Error{Op: "Infer", Message: bodyCapMessage(max),
		Err: fmt.Errorf("%w: "+format+" (--max-body-bytes)", append([]any{ErrResponseTooLarge}, args...)...)}
}

// framing is what the headers say about the body.
type framing struct {
	contentLength int64 // -1: none
	chunked       bool
	close         bool // the connection ends after this answer
}

// request writes the request and waits for the answer to begin. Its frame
// is small on purpose, and the answer's parsing is not under it: a waiting
// connection's goroutine is parked here, thousands of them at once, and a
// stack that never grew past 4 KiB stays at 4 KiB.
func (cn *http1Conn) request(wire []byte, deadline time.Time) error {
	if err := cn.nc.SetDeadline(deadline); err != nil {
		return err
	}
	if cn.aborted.Load() {
		return context.Canceled
	}
	if _, err := cn.nc.Write(wire); err != nil {
		return err
	}
	if cn.raw == nil {
		return nil
	}
	if err := cn.raw.WaitRead(); err != nil {
		return err
	}
	cn.br = readerPool.Get().(*bufio.Reader)
	cn.br.Reset(cn.nc)
	return nil
}

// answer reads the answer to the request written. errBody is the start of
// a non-2xx answer's body, for its message. started reports whether any
// byte of an answer came; reusable whether the connection may carry another
// request.
func (cn *http1Conn) answer(keep bool, max int64) (a InferAnswer, errBody []byte, started, reusable bool, err error) {
	if _, err := cn.br.Peek(1); err != nil {
		return a, nil, false, false, err
	}
	budget := cn.maxHeader
	var f framing
	for interim := 0; ; interim++ {
		if a.Status, f, err = cn.readHead(&budget); err != nil {
			return a, nil, true, false, err
		}
		if a.Status >= 200 {
			break
		}
		if a.Status == 101 || interim == maxInterimAnswers {
			return a, nil, true, false, malformed("unexpected interim answer %d", a.Status)
		}
	}
	keepUpTo := int64(0)
	switch {
	case a.Status > 299:
		keepUpTo = maxErrorBody
	case keep:
		keepUpTo = max
	}
	var body []byte
	noBody := a.Status == 204 || a.Status == 304
	if !noBody {
		if body, a.BodyLen, err = cn.readBody(f, keepUpTo, max); err != nil {
			return a, nil, true, false, err
		}
	}
	// A body that ends when the connection does leaves nothing to reuse.
	reusable = !f.close && (noBody || f.contentLength >= 0 || f.chunked)
	if n := cn.br.Buffered(); n > 0 && reusable {
		return a, nil, true, false, malformed("%d bytes after the end of the %d-byte body", n, a.BodyLen)
	}
	if a.Status > 299 {
		return a, body, true, reusable, nil
	}
	a.Body = body
	a.HeaderLen = -1
	if cn.ihclN > 0 {
		if a.HeaderLen, err = cn.headerLength(a.BodyLen); err != nil {
			return a, nil, true, false, &Error{Op: "Infer", Err: err}
		}
	}
	return a, nil, true, reusable, nil
}

// readerPool holds the read buffers of raw connections between answers.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, http1BufferSize) }}

// release gives a raw connection's read buffer back to the pool once its
// answer is read. Bytes still buffered make the connection unusable
// (answer refuses it), so nothing of a next answer is lost.
func (cn *http1Conn) release() {
	if cn.raw == nil || cn.br == nil {
		return
	}
	cn.br.Reset(nil)
	readerPool.Put(cn.br)
	cn.br = nil
}

// headerLength checks the Inference-Header-Content-Length that came.
func (cn *http1Conn) headerLength(bodyLen int64) (int, error) {
	v := cn.ihcl[:min(cn.ihclLen, len(cn.ihcl))]
	if cn.ihclN == 1 && len(v) > 0 && len(v) <= 18 {
		n := int64(0)
		for _, c := range v {
			if c < '0' || c > '9' {
				n = -1
				break
			}
			n = n*10 + int64(c-'0')
		}
		if n >= 0 && n <= bodyLen {
			return int(n), nil
		}
	}
	// Everything else is an error; ParseHeaderLength says which.
	text := string(v)
	if cn.ihclLen > len(cn.ihcl) {
		text += "…"
	}
	values := make([]string, cn.ihclN)
	values[0] = text
	return checkHeaderLength(values, bodyLen)
}

// readHead reads a status line and its headers.
func (cn *http1Conn) readHead(budget *int) (status int, f framing, err error) {
	line, err := cn.readLine(budget)
	if err != nil {
		return 0, f, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || !isDigit(line[7]) || line[8] != ' ' ||
		!isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) || (len(line) > 12 && line[12] != ' ') || line[9] == '0' {
		return 0, f, malformed("status line %s", quoteCut(line))
	}
	status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	http10 := line[7] == '0'
	f = framing{contentLength: -1, close: http10}
	cn.ihclLen, cn.ihclN = 0, 0
	for {
		line, err := cn.readLine(budget)
		if err != nil {
			return 0, f, err
		}
		if len(line) == 0 {
			return status, f, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !httpfield.Valid(line[:colon], line[colon+1:]) {
			return 0, f, malformed("header line %s", quoteCut(line))
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		if cn.cut && (equalFold(name, "content-length") || equalFold(name, "transfer-encoding") || equalFold(name, "connection")) {
			return 0, f, malformed("%s header line longer than %d bytes", name, maxKeptLine)
		}
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseDecimal(value)
			if !ok {
				return 0, f, malformed("Content-Length %s", quoteCut(value))
			}
			if f.contentLength >= 0 && f.contentLength != n {
				return 0, f, malformed("Content-Length given twice, %d and %d", f.contentLength, n)
			}
			f.contentLength = n
		case equalFold(name, "transfer-encoding") && !http10: // HTTP/1.0 has no chunking: ignored, as net/http does
			if !equalFold(value, "chunked") {
				return 0, f, malformed("unsupported Transfer-Encoding %s", quoteCut(value))
			}
			f.chunked = true
		case equalFold(name, "connection"):
			for _, tok := range bytes.Split(value, []byte(",")) {
				switch tok = trimOWS(tok); {
				case equalFold(tok, "close"):
					f.close = true
				case equalFold(tok, "keep-alive") && http10:
					f.close = false
				}
			}
		case equalFold(name, "inference-header-content-length"):
			if cn.ihclN == 0 {
				cn.ihclLen = copy(cn.ihcl[:], value)
				if len(value) > len(cn.ihcl) {
					cn.ihclLen = len(value)
				}
			}
			cn.ihclN++
		}
	}
}

// readBody reads a body framed as f, keeping at most keepUpTo bytes of it,
// and returns what it kept and the body's length.
func (cn *http1Conn) readBody(f framing, keepUpTo, limit int64) ([]byte, int64, error) {
	// A body of known length is kept in a buffer of its size; one of
	// unknown length is gathered in the connection's scratch buffer and
	// copied out once complete, so a body that turns out too large costs
	// no allocation.
	b := bodyReader{cn: cn, keepUpTo: keepUpTo}
	b.scratch = keepUpTo > 0 && (f.chunked || f.contentLength < 0)
	if b.scratch {
		b.kept = cn.scratch[:0]
		defer func() {
			if cap(b.kept) <= maxScratch {
				cn.scratch = b.kept[:0]
			}
		}()
	} else if keepUpTo > 0 {
		b.kept = make([]byte, 0, min(f.contentLength, keepUpTo))
	}
	var err error
	switch {
	case f.chunked:
		err = b.chunked(limit)
	case f.contentLength >= 0:
		if f.contentLength > limit {
			return nil, 0, tooLarge(limit, "Content-Length %d exceeds %d bytes", f.contentLength, limit)
		}
		if err = b.take(f.contentLength); err != nil {
			err = truncated(err, "body ended after %d of %d bytes (Content-Length)", b.n, f.contentLength)
		}
	default:
		err = b.untilClose(limit)
	}
	if err != nil {
		return nil, b.n, err
	}
	return b.done(), b.n, nil
}

// bodyReader is one body being read: what is kept of it and how much was
// read.
type bodyReader struct {
	cn       *http1Conn
	kept     []byte
	keepUpTo int64
	n        int64
	scratch  bool // kept is the connection's scratch buffer
}

// done returns what was kept, copied out of the scratch buffer.
func (b *bodyReader) done() []byte {
	if b.scratch {
		return bytes.Clone(b.kept)
	}
	return b.kept
}

// take reads k bytes of the body, keeping what fits under keepUpTo.
func (b *bodyReader) take(k int64) error {
	if keep := min(k, b.keepUpTo-int64(len(b.kept))); keep > 0 {
		start := len(b.kept)
		if need := start + int(keep); need > cap(b.kept) {
			// Double, but never beyond keepUpTo: what a hostile server can
			// make a request hold is keepUpTo.
			grown := make([]byte, start, min(max(2*cap(b.kept), need), int(b.keepUpTo)))
			copy(grown, b.kept)
			b.kept = grown
		}
		b.kept = b.kept[:start+int(keep)]
		m, err := io.ReadFull(b.cn.br, b.kept[start:])
		b.kept = b.kept[:start+m]
		b.n += int64(m)
		if err != nil {
			return err
		}
		k -= keep
	}
	for k > 0 {
		d, err := b.cn.br.Discard(int(min(k, 1<<30)))
		k -= int64(d)
		b.n += int64(d)
		if err != nil {
			return err
		}
	}
	return nil
}

// chunked reads a chunked body and its trailers.
func (b *bodyReader) chunked(limit int64) error {
	cn := b.cn
	budget := cn.maxHeader
	for {
		line, err := cn.readLine(&budget)
		if err != nil {
			return truncated(err, "chunked body ended after %d bytes", b.n)
		}
		size, ok := parseChunkSize(line)
		if !ok || !cn.crlf {
			return malformed("chunk size line %s", quoteCut(line))
		}
		if size == 0 {
			break
		}
		if size > limit-b.n {
			return tooLarge(limit, "chunked body exceeds %d bytes", limit)
		}
		if err := b.take(size); err != nil {
			return truncated(err, "chunked body ended inside a chunk after %d bytes", b.n)
		}
		crlf, err := cn.br.Peek(2)
		if err != nil || crlf[0] != '\r' || crlf[1] != '\n' {
			return truncated(err, "chunk of %d bytes not followed by CRLF", size)
		}
		cn.br.Discard(2)
	}
	for { // trailers
		line, err := cn.readLine(&budget)
		if err != nil {
			return truncated(err, "chunked body trailer ended early")
		}
		if !cn.crlf {
			return malformed("chunked body trailer line %s not ended by CRLF", quoteCut(line))
		}
		if len(line) == 0 {
			return nil
		}
		if colon := bytes.IndexByte(line, ':'); colon <= 0 || !httpfield.Valid(line[:colon], line[colon+1:]) {
			return malformed("chunked body trailer line %s", quoteCut(line))
		}
	}
}

// untilClose reads a body that ends when the server closes the connection.
func (b *bodyReader) untilClose(limit int64) error {
	for {
		if b.n >= limit {
			if _, err := b.cn.br.Peek(1); err == io.EOF {
				return nil
			}
			return tooLarge(limit, "body exceeds %d bytes", limit)
		}
		err := b.take(min(limit-b.n, http1BufferSize))
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// truncated describes a body cut short: malformed when the connection
// ended, the I/O error itself otherwise (a timeout stays a timeout).
func truncated(err error, format string, args ...any) error {
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return malformed(format, args...)
	}
	return err
}

// readLine reads one line without its CRLF (or LF). The result is valid
// until the next read. budget bounds the bytes read over several calls; of
// a line longer than maxKeptLine only its start is kept (cn.cut), so a
// hostile header costs its reading time, not its size in memory.
func (cn *http1Conn) readLine(budget *int) ([]byte, error) {
	line, err := cn.br.ReadSlice('\n')
	n := len(line)
	cn.cut = false
	if err == bufio.ErrBufferFull {
		cn.line = append(cn.line[:0], line...)
		end := [2]byte{line[len(line)-2], line[len(line)-1]} // the line's last two bytes
		// The dropped tail is never parsed, but a control byte in it makes
		// the field invalid as net/http reads it: scan what follows the
		// first segment (CR counts only before the final LF).
		cr, ctl := line[len(line)-1] == '\r', false
		for err == bufio.ErrBufferFull && n <= *budget {
			line, err = cn.br.ReadSlice('\n')
			n += len(line)
			for _, c := range line {
				ctl = ctl || cr && c != '\n' || c < 0x20 && c != '\t' && c != '\r' && c != '\n' || c == 0x7f
				cr = c == '\r'
			}
			if keep := min(len(line), maxKeptLine-len(cn.line)); keep > 0 {
				cn.line = append(cn.line, line[:keep]...)
			}
			if len(line) == 1 {
				end = [2]byte{end[1], line[0]}
			} else if len(line) > 1 {
				end = [2]byte{line[len(line)-2], line[len(line)-1]}
			}
		}
		if n > len(cn.line) { // keep how the line ended: CRLF or LF
			cn.cut = true
			cn.line = append(cn.line[:maxKeptLine-2], end[:]...)
			if ctl && err == nil {
				return nil, malformed("a header line longer than %d bytes holds a control byte", maxKeptLine)
			}
		}
		line = cn.line
	}
	if *budget -= n; *budget < 0 {
		return nil, malformed("status line and headers exceed %d bytes (--max-header-bytes)", cn.maxHeader)
	}
	if err != nil {
		if err == io.EOF && n > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	cn.crlf = len(line) > 0 && line[len(line)-1] == '\r'
	if cn.crlf {
		line = line[:len(line)-1]
	}
	return line, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// trimOWS trims spaces and tabs.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares b with the lower-case ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// parseDecimal parses 1 to 18 decimal digits.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseChunkSize parses a chunk-size line: 1 to 15 hex digits, then
// optional whitespace and a ;extension.
func parseChunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = trimOWS(line)
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range line {
		switch {
		case isDigit(c):
			n = n<<4 | int64(c-'0')
		case 'a' <= c && c <= 'f':
			n = n<<4 | int64(c-'a'+10)
		case 'A' <= c && c <= 'F':
			n = n<<4 | int64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// quoteCut quotes at most 64 bytes of b for a message.
func quoteCut(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "…"
	}
	return strconv.Quote(string(b))
}
