package reference

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oipkit/oipkit/internal/httpfield"
	"github.com/oipkit/oipkit/internal/rawtcp"
)

// The REST listener serves the hot route itself on plain TCP: POST
// /v2/models/{m}[/versions/{v}]/infer over HTTP/1.1 with a Content-Length.
// On small tensors net/http costs the server more than the model does (a
// header map and strings per request, a goroutine per request watching the
// connection, a second pass over the header to write it), and the REST
// figures of every benchmark run against the reference are net/http's.
//
// Any request the fast path does not take — every other route and method,
// HTTP/1.0, a chunked or Expect body, an upgrade, a query, an escaped path,
// a body over the limit, unusual header syntax, a header block over
// http1BufferSize — hands its connection, with every byte read so far, to
// net/http for good, which then answers exactly as it did before the fast
// path existed. Both paths run the same handler (serveHTTP), so routing,
// validation, errors, statistics and metrics do not depend on which one
// parsed the request. With TLS, net/http serves everything.

const (
	// http1BufferSize is the read buffer of a fast-path connection and the
	// largest header block it parses (net/http's default buffer size).
	http1BufferSize = 4 << 10
	// http1MaxHeaders is the most header fields the fast path takes.
	http1MaxHeaders = 32
	// http1DiscardLimit is how much of a body the handler did not read is
	// read and dropped to keep the connection (net/http's
	// maxPostHandlerReadBytes).
	http1DiscardLimit = 256 << 10
	// http1WatchDelay is how long a request runs before its connection is
	// watched for the client going away, which cancels the request's
	// context as net/http does. Shorter requests are not watched: watching
	// costs a read that has to be undone.
	http1WatchDelay = 10 * time.Millisecond
)

// http1Server owns the bound REST listener: it accepts every connection,
// serves fast-path requests and hands the rest to net/http through handoff.
type http1Server struct {
	s       *Server
	ln      net.Listener
	handoff *handoffListener

	closing atomic.Bool // Shutdown or Close began: no new requests
	mu      sync.Mutex
	forced  bool // Close began: connections just accepted are closed too
	conns   map[*http1Conn]struct{}
	wg      sync.WaitGroup // the accept loop and every connection's goroutine
}

func newHTTP1Server(s *Server, ln net.Listener) *http1Server {
	return &http1Server{
		s:       s,
		ln:      ln,
		handoff: &handoffListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})},
		conns:   make(map[*http1Conn]struct{}),
	}
}

// start accepts connections in the background until the listener is
// closed, and sends a failure of the listener to errs.
func (h *http1Server) start(errs chan<- error) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := h.serve(); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("serve HTTP: %w", err)
		}
	}()
}

// serve accepts connections until the listener is closed. Like
// net/http.Server.Serve it retries temporary accept errors with a backoff.
func (h *http1Server) serve() error {
	var backoff time.Duration
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if h.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		hc := newHTTP1Conn(h, c)
		if !h.track(hc) {
			c.Close()
			continue
		}
		go hc.serve()
	}
}

func (h *http1Server) track(hc *http1Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A connection accepted as Shutdown closed the listener is served
	// still: its client may have sent its request already.
	if h.forced {
		return false
	}
	h.conns[hc] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *http1Server) forget(hc *http1Conn) {
	h.mu.Lock()
	delete(h.conns, hc)
	h.mu.Unlock()
	h.wg.Done()
}

// Once Shutdown began, a connection waiting for a request ends, unless its
// client may have sent one already, which ending it would lose without an
// answer (the client sees a reset, not a refusal): one whose request's
// bytes wait to be read is served, and a new one waits freshGrace for its
// first (net/http's Shutdown leaves a new connection 5 s). Its goroutine
// decides, not Shutdown, which would not know whether it has just read a
// request's bytes: Shutdown ends the wait (wake).

// freshGrace is how long a new connection that has sent nothing is left
// open once Shutdown began: a client writes its request as soon as it
// connected.
const freshGrace = 250 * time.Millisecond

// setIdle marks hc as waiting for a request (idle; first: its first), or
// as having one, and reports whether to go on: not once Close closed it,
// nor when it is to wait once Shutdown began, unless as said above.
func (h *http1Server) setIdle(hc *http1Conn, idle, first bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hc.shut {
		return false
	}
	hc.idle, hc.fresh = idle, first
	if !idle || !h.closing.Load() {
		return true
	}
	if first {
		hc.c.SetReadDeadline(time.Now().Add(freshGrace))
		return true
	}
	return rawtcp.Pending(hc.c)
}

// wake ends the wait of idle connection hc as Shutdown begins (a new one's
// after freshGrace); its goroutine then serves a request that came, or
// ends it. Under h.mu.
func (h *http1Server) wake(hc *http1Conn) {
	if hc.fresh {
		hc.c.SetReadDeadline(time.Now().Add(freshGrace))
		return
	}
	hc.c.SetReadDeadline(time.Unix(1, 0))
}

// shutdown stops accepting, ends the wait of idle connections (wake), and
// waits for the requests in flight; when ctx ends first it closes every
// connection and returns ctx's error. net/http's own connections are shut
// down by its Server.Shutdown.
func (h *http1Server) shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing.Store(true)
	h.ln.Close()
	for hc := range h.conns {
		if hc.idle {
			h.wake(hc)
		}
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.close()
		<-done
		return ctx.Err()
	}
}

// close closes the listener and every connection, and cancels the requests
// in flight.
func (h *http1Server) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closing.Store(true)
	h.forced = true
	h.ln.Close()
	for hc := range h.conns {
		hc.shut = true
		hc.c.Close()
		hc.cancel()
	}
}

// handoffListener is the listener net/http serves: it yields the
// connections the fast path handed over.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// give hands c to net/http, or closes it when net/http has stopped.
func (l *handoffListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// handedConn is a connection handed to net/http: its reads start with the
// bytes the fast path buffered.
type handedConn struct {
	net.Conn
	r io.Reader
}

func (c *handedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite lets net/http half-close before it closes, as it does on a
// bare TCP connection.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connReader reads the connection, starting with a byte the watcher read.
type connReader struct {
	c       net.Conn
	pending []byte
	one     [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.c.Read(p)
}

// http1Conn is one connection on the fast path. Its request, header map,
// response and buffers are reused by every request it serves.
type http1Conn struct {
	h      *http1Server
	c      net.Conn
	r      connReader
	br     *bufio.Reader
	ctx    context.Context // the context of its requests: ends when it closes or the client goes
	cancel context.CancelFunc
	idle   bool // guarded by h.mu, as fresh and shut
	fresh  bool // idle before its first request
	shut   bool // closed by Close

	req     *http.Request
	url     url.URL
	header  http.Header
	body    fixedBody
	w       http1Response
	vals    [http1MaxHeaders]string // the backing of header's values
	strs    [16]string              // recent header values and paths, reused when a request repeats them
	nstrs   int
	remote  string
	dateSec int64
	date    []byte
	out     []byte
	bufs    [4][]byte // the backing of a write's head and body parts

	watch watch
}

func newHTTP1Conn(h *http1Server, c net.Conn) *http1Conn {
	hc := &http1Conn{h: h, c: c, header: make(http.Header), remote: c.RemoteAddr().String()}
	hc.r.c = c
	hc.br = bufio.NewReaderSize(&hc.r, http1BufferSize)
	hc.ctx, hc.cancel = context.WithCancel(context.Background())
	hc.req = (&http.Request{}).WithContext(hc.ctx)
	hc.body.br = hc.br
	hc.w.header = make(http.Header)
	hc.w.conn = hc
	return hc
}

// errHandedOff ends a connection's loop after net/http took it.
var errHandedOff = errors.New("handed to net/http")

func (hc *http1Conn) serve() {
	defer hc.h.forget(hc)
	defer hc.cancel()
	defer hc.watch.stop()
	handed := false
	defer func() {
		// As net/http: a fault of the fast path ends its connection, not
		// the server.
		if p := recover(); p != nil {
			hc.h.s.log.Error("REST connection panicked", "remote", hc.remote, "panic", p, "stack", string(debug.Stack()))
		}
		if !handed {
			hc.c.Close()
		}
	}()
	handed = hc.loop() == errHandedOff
}

// loop serves requests until the connection ends, returning why.
func (hc *http1Conn) loop() error {
	cfg := &hc.h.s.cfg
	for first := true; ; first = false {
		if hc.br.Buffered() == 0 {
			// As net/http: the idle timeout (or the read timeout) between
			// requests, the header timeout before the first.
			wait := cfg.IdleTimeout
			if wait == 0 {
				wait = cfg.ReadTimeout
			}
			if first {
				wait = cfg.ReadHeaderTimeout
				if wait == 0 {
					wait = cfg.ReadTimeout
				}
			}
			hc.c.SetReadDeadline(deadline(time.Now(), wait))
			// Between requests: idle, so Shutdown may end the wait.
			if !hc.h.setIdle(hc, true, first) {
				return http.ErrServerClosed
			}
			_, err := hc.br.Peek(1)
			if !hc.h.setIdle(hc, false, first) {
				return http.ErrServerClosed
			}
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) && hc.h.closing.Load() && rawtcp.Pending(hc.c) {
					continue // Shutdown ended the wait as a request came: it is served
				}
				return err
			}
		}
		if err := hc.ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		headerWait := cfg.ReadHeaderTimeout
		if headerWait == 0 {
			headerWait = cfg.ReadTimeout
		}
		hc.c.SetReadDeadline(deadline(start, headerWait))
		n, fast, err := hc.readHeader()
		if err != nil {
			return err
		}
		if !fast {
			hc.handOff()
			return errHandedOff
		}
		if _, err := hc.br.Discard(n); err != nil {
			return err
		}
		if cfg.ReadTimeout != headerWait {
			hc.c.SetReadDeadline(deadline(start, cfg.ReadTimeout))
		}
		if cfg.WriteTimeout > 0 {
			hc.c.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		}
		keep, err := hc.serveRequest(start)
		if err != nil {
			return err
		}
		if !keep {
			return nil
		}
	}
}

// deadline is now+d, or no deadline for d = 0.
func deadline(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// readHeader waits for a whole header block in the buffer and parses it
// into hc.req. n is the block's length; fast is false when the request is
// net/http's to serve.
func (hc *http1Conn) readHeader() (n int, fast bool, err error) {
	for {
		buf, _ := hc.br.Peek(hc.br.Buffered())
		if i := bytes.Index(buf, crlfcrlf); i >= 0 {
			return i + 4, hc.parse(buf[:i+2]), nil
		}
		if bytes.Contains(buf, lflf) || bytes.Contains(buf, lfcrlf) || len(buf) == hc.br.Size() {
			// Bare-LF line ends, or a header block larger than the buffer.
			return 0, false, nil
		}
		// Decide as soon as the bytes so far cannot start a fast-path
		// request (another method, a TLS handshake, a bad request
		// line), so that net/http answers them without waiting for more.
		if line, _, complete := bytes.Cut(buf, crlf); complete {
			if _, ok := requestTarget(line); !ok {
				return 0, false, nil
			}
		} else if !bytes.HasPrefix([]byte(fastMethod), buf[:min(len(buf), len(fastMethod))]) {
			return 0, false, nil
		}
		if _, err := hc.br.Peek(len(buf) + 1); err != nil {
			if err == io.EOF && len(buf) > 0 {
				// A header cut short by the client's close: net/http
				// answers it (400 Bad Request), so it gets the bytes.
				return 0, false, nil
			}
			return 0, false, err
		}
	}
}

var (
	crlf     = []byte("\r\n")
	crlfcrlf = []byte("\r\n\r\n")
	lflf     = []byte("\n\n")
	lfcrlf   = []byte("\n\r\n")
)

// handOff gives the connection, and what is buffered, to net/http.
func (hc *http1Conn) handOff() {
	hc.c.SetDeadline(time.Time{}) // net/http sets its own
	hc.h.handoff.give(&handedConn{Conn: hc.c, r: hc.br})
}

// parse reads a header block (request line and fields, each ending in
// CRLF) into hc.req, reporting whether the fast path serves it.
func (hc *http1Conn) parse(block []byte) bool {
	line, rest, _ := bytes.Cut(block, crlf)
	target, ok := requestTarget(line)
	if !ok {
		return false
	}
	path := hc.str(target)
	if rt, ok := matchRoute(path); !ok || rt.kind != routeModelInfer {
		return false
	}
	clear(hc.header)
	var host string
	hostSeen, closeAfter := false, false
	length := int64(-1)
	for fields := 0; len(rest) > 0; fields++ {
		if fields == http1MaxHeaders {
			return false
		}
		line, rest, _ = bytes.Cut(rest, crlf)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return false // no name, or an obsolete line folding
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !httpfield.Valid(name, value) {
			return false
		}
		key := canonicalKey(name)
		switch key {
		case "Content-Length":
			if length >= 0 || len(value) == 0 || len(value) > 18 {
				return false
			}
			length = 0
			for _, b := range value {
				if b < '0' || b > '9' {
					return false
				}
				length = length*10 + int64(b-'0')
			}
		case "Host":
			if hostSeen {
				return false
			}
			for _, b := range value {
				if !hostByte(b) {
					return false
				}
			}
			hostSeen, host = true, hc.str(value)
			continue // net/http keeps Host in Request.Host only
		case "Connection":
			switch {
			case bytes.EqualFold(value, []byte("close")):
				closeAfter = true
			case !bytes.EqualFold(value, []byte("keep-alive")):
				return false
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Http2-Settings", "Te", "Trailer":
			return false
		case "":
			key = http.CanonicalHeaderKey(string(name))
		}
		if vs, ok := hc.header[key]; ok {
			hc.header[key] = append(vs, hc.str(value)) // a repeated field
			continue
		}
		hc.vals[fields] = hc.str(value)
		hc.header[key] = hc.vals[fields : fields+1 : fields+1]
	}
	if !hostSeen || length < 0 || length > hc.h.s.cfg.MaxBodyBytes {
		return false
	}
	hc.url = url.URL{Path: path}
	r := hc.req
	r.Method = http.MethodPost
	r.URL = &hc.url
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Header = hc.header
	r.ContentLength = length
	r.Host = host
	r.RemoteAddr = hc.remote
	r.RequestURI = path
	r.Close = closeAfter
	hc.body.n = length
	hc.body.done.Store(length == 0)
	hc.body.eof = false
	r.Body = &hc.body
	return true
}

const fastMethod, fastProto = "POST ", " HTTP/1.1"

// requestTarget returns the target of a request line the fast path may
// serve: POST over HTTP/1.1 to a path it takes verbatim.
func requestTarget(line []byte) ([]byte, bool) {
	if len(line) < len(fastMethod)+len(fastProto) || // "POST HTTP/1.1" has both, overlapping
		!bytes.HasPrefix(line, []byte(fastMethod)) || !bytes.HasSuffix(line, []byte(fastProto)) {
		return nil, false
	}
	target := line[len(fastMethod) : len(line)-len(fastProto)]
	if len(target) == 0 || target[0] != '/' {
		return nil, false
	}
	for _, b := range target {
		if !pathByte(b) {
			return nil, false // a query, an escape, or bytes net/http would refuse or re-escape
		}
	}
	return target, true
}

// canonicalKey is the canonical form of the header names clients commonly
// send, without allocating; "" for any other name.
func canonicalKey(name []byte) string {
	for _, k := range commonKeys {
		if len(k) == len(name) && bytes.EqualFold(name, []byte(k)) {
			return k
		}
	}
	return ""
}

var commonKeys = [...]string{
	"Host", "User-Agent", "Accept", "Accept-Encoding", "Content-Type", "Content-Length",
	"Connection", "Inference-Header-Content-Length", "Transfer-Encoding", "Expect",
	"Upgrade", "Http2-Settings", "Te", "Trailer",
}

// str is b as a string, reusing the string of an earlier request on the
// connection when b repeats it (clients send the same header values and
// path on every request).
func (hc *http1Conn) str(b []byte) string {
	for _, s := range hc.strs[:min(hc.nstrs, len(hc.strs))] {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	hc.strs[hc.nstrs%len(hc.strs)] = s
	hc.nstrs++
	return s
}

// pathByte reports whether b may appear in a fast-path request target:
// unreserved characters and "/", which net/http neither unescapes nor
// re-escapes, so the path is the target.
func pathByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == '~' || b == '/'
}

// hostByte reports whether b may appear in a Host the fast path takes.
func hostByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == ':' || b == '[' || b == ']'
}

// serveRequest runs the handler on the parsed request and writes its
// response; keep reports whether the connection serves another request.
func (hc *http1Conn) serveRequest(start time.Time) (keep bool, err error) {
	w := &hc.w
	w.reset(hc.req.Close)
	hc.watch.arm(hc)
	aborted := hc.runHandler()
	hc.watch.disarm(hc)
	if aborted {
		return false, nil
	}
	if err := w.finish(start); err != nil {
		return false, err
	}
	if w.closeAfter && !hc.body.done.Load() && !hc.body.eof {
		// Unread request bytes would make the close a reset that can
		// destroy the response in flight: half-close and let the client
		// read it first, as net/http does.
		if cw, ok := hc.c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			time.Sleep(500 * time.Millisecond)
		}
	}
	return !w.closeAfter, nil
}

// runHandler runs serveHTTP, which answers every panic but
// http.ErrAbortHandler; that one ends the connection, as with net/http.
func (hc *http1Conn) runHandler() (aborted bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				hc.h.s.log.Error("REST connection panicked", "panic", p)
			}
			aborted = true
		}
	}()
	hc.h.s.serveHTTP(&hc.w, hc.req)
	return false
}

// fixedBody is a request body of a known length read from the connection's
// buffer; it ends early only with io.ErrUnexpectedEOF.
type fixedBody struct {
	br   *bufio.Reader
	n    int64
	done atomic.Bool // all of it read: the watcher may read the connection
	eof  bool        // the client closed before its end: later reads see io.EOF, as net/http's body does
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 || b.eof {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	if b.n == 0 {
		b.done.Store(true)
		return n, nil
	}
	if err == io.EOF {
		b.eof = true
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *fixedBody) Close() error { return nil }

// http1Response is the fast path's http.ResponseWriter. A body whose
// handler declared its Content-Length is written through as it comes;
// otherwise it is buffered and sent with its length when the handler
// returns (the infer route's bodies are built whole before they are written).
type http1Response struct {
	conn       *http1Conn
	header     http.Header
	status     int
	closeAfter bool
	body       []byte
	declared   int64 // the handler's Content-Length; -1 when it set none
	written    int64 // body bytes written through
	through    bool  // the body goes straight out, after the head
	headSent   bool  // the head is written (a first Write may carry no body bytes)
	err        error
}

func (w *http1Response) reset(closeAfter bool) {
	clear(w.header)
	w.status, w.closeAfter, w.body, w.declared, w.written, w.through, w.headSent, w.err = 0, closeAfter, w.body[:0], -1, 0, false, false, nil
	if cap(w.body) > maxPooledBuffer {
		w.body = nil
	}
}

func (w *http1Response) Header() http.Header { return w.header }

func (w *http1Response) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *http1Response) Write(p []byte) (int, error) {
	n, err := w.write(p, nil)
	return int(n), err
}

// WriteParts writes first and then each of rest as the body, in one
// writev with the head when the handler declared the Content-Length: a
// large REST binary answer goes out as its JSON header and the tensors' own
// memory, copied nowhere (serveInfer). Written apart, the 16 MiB answer
// slowed to 0.1 request/s (d98e27a); one writev is one send.
func (w *http1Response) WriteParts(first []byte, rest [][]byte) (int64, error) {
	return w.write(first, rest)
}

// write is Write of p followed by more; it returns the body bytes taken.
func (w *http1Response) write(p []byte, more [][]byte) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.through && len(w.body) == 0 {
		if v := w.header["Content-Length"]; len(v) == 1 {
			if n, err := strconv.ParseInt(v[0], 10, 64); err == nil && n >= 0 {
				w.declared, w.through = n, true
			}
		}
	}
	total := int64(len(p))
	for _, m := range more {
		total += int64(len(m))
	}
	if !w.through {
		w.body = append(w.body, p...)
		for _, m := range more {
			w.body = append(w.body, m...)
		}
		return total, nil
	}
	if w.written+total > w.declared {
		return 0, http.ErrContentLength
	}
	head := w.conn.out[:0]
	if !w.headSent {
		head = w.appendHead(head, w.declared)
		w.headSent = true
	}
	w.conn.out = head
	vec := append(append(w.conn.bufs[:0], head, p), more...)
	bufs := net.Buffers(vec)
	n, err := bufs.WriteTo(w.conn.c)
	clear(vec) // keep no request's memory past its answer
	if n > int64(len(head)) {
		w.written += n - int64(len(head))
	}
	if err != nil {
		w.err = err
		return max(n-int64(len(head)), 0), err
	}
	return total, nil
}

// finish sends what the handler left: the whole response when it was
// buffered, nothing when it went through.
func (w *http1Response) finish(start time.Time) error {
	if w.err != nil {
		return w.err
	}
	if w.through {
		if w.written != w.declared {
			w.closeAfter = true // the client is waiting for bytes that will not come
			if !w.headSent {
				_, err := w.conn.c.Write(w.appendHead(w.conn.out[:0], w.declared))
				return err
			}
		}
		return nil
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if _, ok := w.header["Content-Type"]; !ok && len(w.body) > 0 {
		w.header["Content-Type"] = []string{http.DetectContentType(w.body)}
	}
	out := w.appendHead(w.conn.out[:0], int64(len(w.body)))
	out = append(out, w.body...)
	w.conn.out = out
	_, err := w.conn.c.Write(out)
	if cap(w.conn.out) > maxPooledBuffer {
		w.conn.out = nil
	}
	return err
}

// settle decides, as the head is written (as net/http decides it), whether
// the connection ends after this response: the handler may not have read
// the whole body, so a small rest is read and dropped and a large one ends
// the connection; so does a Shutdown under way.
func (w *http1Response) settle() {
	hc := w.conn
	if hc.body.n > 0 { // the handler left some of the body unread
		if hc.body.n > http1DiscardLimit {
			w.closeAfter = true
		} else if _, err := io.Copy(io.Discard, &hc.body); err != nil {
			w.closeAfter = true
		}
	}
	if hc.h.closing.Load() {
		w.closeAfter = true
	}
}

// appendHead settles the connection's fate, then appends the status line
// and header fields: the handler's in sorted order (as net/http writes
// them), then Date, Content-Length and, when the connection ends after it,
// Connection: close.
func (w *http1Response) appendHead(b []byte, length int64) []byte {
	w.settle()
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	if text := http.StatusText(w.status); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(w.status), 10)
	}
	b = append(b, "\r\n"...)
	var keysBuf [8]string
	keys := keysBuf[:0]
	for k := range w.header {
		switch k {
		case "Content-Length", "Date", "Connection", "Transfer-Encoding":
			continue // the fast path writes these itself
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validHeaderName(k) {
			continue
		}
		for _, v := range w.header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			for i := 0; i < len(v); i++ {
				c := v[i]
				if c == '\r' || c == '\n' {
					c = ' ' // as net/http does: no header injection
				}
				b = append(b, c)
			}
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "Date: "...)
	b = append(b, w.conn.httpDate()...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, length, 10)
	b = append(b, "\r\n"...)
	if w.closeAfter {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "\r\n"...)
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !httpfield.TokenByte(k[i]) {
			return false
		}
	}
	return true
}

// httpDate is the Date header value, formatted once a second.
func (hc *http1Conn) httpDate() []byte {
	now := time.Now()
	if sec := now.Unix(); sec != hc.dateSec || hc.date == nil {
		hc.dateSec = sec
		hc.date = now.UTC().AppendFormat(hc.date[:0], http.TimeFormat)
	}
	return hc.date
}

// watch notices a client going away while its request runs, as net/http's
// background read does, but only for requests that run longer than
// http1WatchDelay: it reads the connection once the body has been read,
// cancels the connection's context on EOF or an error, and keeps a byte of
// a pipelined request for the next parse.
type watch struct {
	timer   *time.Timer
	mu      sync.Mutex
	armed   bool
	reading bool
	done    chan struct{}
}

func (w *watch) arm(hc *http1Conn) {
	w.mu.Lock()
	w.armed = true
	w.mu.Unlock()
	if w.timer == nil {
		w.done = make(chan struct{}, 1)
		w.timer = time.AfterFunc(http1WatchDelay, func() { w.fire(hc) })
		return
	}
	w.timer.Reset(http1WatchDelay)
}

// fire runs on the timer's goroutine while the handler may still run.
func (w *watch) fire(hc *http1Conn) {
	w.mu.Lock()
	// The handler no longer touches the buffer once the body is read; a
	// buffered byte is a pipelined request: the client is there.
	if !w.armed || w.reading || !hc.body.done.Load() || hc.br.Buffered() > 0 || len(hc.r.pending) > 0 {
		w.mu.Unlock()
		return
	}
	w.reading = true
	w.mu.Unlock()
	n, err := hc.c.Read(hc.r.one[:])
	if n == 1 {
		hc.r.pending = hc.r.one[:1]
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		hc.cancel() // the client closed or reset the connection
	}
	w.done <- struct{}{}
}

// disarm stops watching, aborting a read in progress, before the
// connection's goroutine uses the connection again.
func (w *watch) disarm(hc *http1Conn) {
	w.timer.Stop()
	w.mu.Lock()
	w.armed = false
	reading := w.reading
	w.mu.Unlock()
	if reading {
		hc.c.SetReadDeadline(time.Unix(1, 0))
		<-w.done
		w.mu.Lock()
		w.reading = false
		w.mu.Unlock()
	}
}

func (w *watch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
