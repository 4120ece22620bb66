package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/internal/rawtcp"
)

// h2cClient sends unary gRPC calls of pre-serialized messages over HTTP/2
// cleartext with prior knowledge (h2c), which every gRPC server accepts: the
// load generator's gRPC hot path. It does what grpc-go's client does for a
// unary call with none of its per-call machinery: the caller writes its
// HEADERS and DATA frames itself under the connection's write lock (no
// writer goroutine), from a header block encoded once, and one reader
// goroutine per connection hands each answer to the call waiting for it.
//
// Every peer-controlled quantity is bounded: frame sizes (h2cMaxFrame, as
// advertised), the header list (Options.MaxHeaderBytes), the message
// (Options.MaxMessageBytes) and the time of a call (Options.Timeout or the
// context's deadline). Flow control is honoured both ways; a connection that
// breaks fails its calls and is replaced by the next call.
type h2cClient struct {
	addr    string
	timeout time.Duration
	max     int64  // largest response message
	maxHead int    // largest header list, decoded or on the wire
	block   []byte // the request's constant header block
	slots   []*h2cSlot
	next    atomic.Uint64
	dialer  net.Dialer
	closed  atomic.Bool
}

// h2cSlot holds one of the client's connections, replaced when it breaks or
// the server sends GOAWAY.
type h2cSlot struct {
	mu      sync.Mutex
	cn      *h2cConn
	dialing chan struct{} // closed when the dial under way ends
}

// Limits and windows of the lean transport.
//
// Large frames and windows let a server send a large message in a few big
// DATA frames without waiting for a WINDOW_UPDATE (issue 25: 16 KiB frames
// and a 1 MiB stream window held a 16 MiB answer at half the loopback's
// speed). The windows bound nothing the client holds: it reads every frame
// as it comes, and a message is bounded by Options.MaxMessageBytes.
const (
	h2cMaxFrame   = 1<<24 - 1 // SETTINGS_MAX_FRAME_SIZE advertised: the largest there is
	h2cConnWindow = 1 << 30   // connection receive window
)

// h2cStreamWindow is the stream receive window advertised as
// SETTINGS_INITIAL_WINDOW_SIZE (a variable so tests can shrink it).
var h2cStreamWindow int32 = 1 << 30

const modelInferPath = "/inference.GRPCInferenceService/ModelInfer"

func newH2C(addr string, opts Options, md []string) (*h2cClient, error) {
	authority := opts.Host
	if authority == "" {
		authority = addr
	}
	ua := userAgent
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	// Every field is a "never indexed" literal (Sensitive): the block neither
	// adds to nor refers to a dynamic table, so it can be sent as is on every
	// stream and leaves the server's table alone.
	field := func(k, v string) error {
		if !validGRPCHeader(k, v) {
			return fmt.Errorf("invalid gRPC metadata %q: %q", k, v)
		}
		return enc.WriteField(hpack.HeaderField{Name: k, Value: v, Sensitive: true})
	}
	for _, kv := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", modelInferPath}, {":authority", authority},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1], Sensitive: true})
	}
	for i := 0; i < len(md); i += 2 {
		if md[i] == "user-agent" {
			ua = md[i+1] + " " + userAgent
		}
	}
	if err := field("user-agent", ua); err != nil {
		return nil, err
	}
	for i := 0; i < len(md); i += 2 {
		if md[i] == "user-agent" {
			continue
		}
		v := md[i+1]
		if strings.HasSuffix(md[i], "-bin") { // binary metadata, as grpc-go sends it
			v = base64.RawStdEncoding.EncodeToString([]byte(v))
		}
		if err := field(md[i], v); err != nil {
			return nil, err
		}
	}
	h := &h2cClient{
		addr: addr, timeout: opts.Timeout, max: opts.MaxMessageBytes, block: buf.Bytes(),
		maxHead: int(min(opts.MaxHeaderBytes, math.MaxUint32>>1)),
		dialer:  net.Dialer{KeepAlive: 30 * time.Second},
	}
	for range opts.Connections {
		h.slots = append(h.slots, &h2cSlot{})
	}
	return h, nil
}

// validGRPCHeader reports whether k: v can be sent as HTTP/2 metadata:
// a lower-case token name, not a pseudo or reserved field, and a value
// without control characters.
func validGRPCHeader(k, v string) bool {
	if k == "" || k[0] == ':' || k == "content-type" || k == "te" || k == "grpc-timeout" || k == "connection" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// h2cConn is one HTTP/2 connection.
type h2cConn struct {
	nc net.Conn
	h  *h2cClient

	// wmu serialises writes; it is taken before mu when both are held.
	// queued counts calls waiting for it: a call that finishes its frames
	// with another queued leaves the flush to that one, so that calls
	// arriving together share one write to the socket.
	wmu    sync.Mutex
	queued atomic.Int32
	bw     *h2cWriter
	fr     *http2.Framer // writes under wmu; reads by the reader goroutine only
	hdr    []byte        // the header block being written
	wdead  time.Time     // the write deadline set on nc (see send)

	mu        sync.Mutex
	streams   map[uint32]*h2cStream
	nextID    uint32
	active    int    // streams open or reserved
	maxActive int    // the peer's SETTINGS_MAX_CONCURRENT_STREAMS
	maxFrame  int    // the peer's SETTINGS_MAX_FRAME_SIZE
	initWin   int64  // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	sendWin   int64  // connection send window
	recvAvail int64  // connection receive window left
	recvDone  int64  // bytes consumed and not yet given back
	goAway    bool   // no new streams (GOAWAY, or stream ids used up)
	lastID    uint32 // GOAWAY's last stream id
	err       error  // set once the connection broke
	changed   chan struct{}
	frames    atomic.Uint64 // frames read: progress, for hung-server detection

	// The reader's header decoding: the fields of the block being read
	// (HEADERS then CONTINUATION frames) are taken as they are decoded,
	// without building a header map.
	dec *hpack.Decoder
	hb  headerBlock

	// The reader's own DATA reads (h2c_direct.go): br is the Framer's
	// reader too; inBlock is set while a header block is unfinished.
	direct  bool
	inBlock bool
	br      *bufio.Reader
	src     connSource
	frame   sliceSource // a DATA frame the Framer read
	msg     h2cMsg      // onData's copy of a stream's h2cMsg
}

// headerBlock is what a response's headers or trailers say.
type headerBlock struct {
	id          uint32
	endStream   bool
	wire        int // encoded bytes
	size        int // decoded bytes, as HTTP/2 counts them for the list size
	limit       int // the largest size and wire accepted
	status      string
	ctype       string
	grpcStatus  string
	hasStatus   bool
	grpcMessage string
}

// onField takes one decoded header field.
func (cn *h2cConn) onField(f hpack.HeaderField) {
	hb := &cn.hb
	if hb.size += int(f.Size()); hb.size > cn.h.maxHead {
		cn.dec.SetEmitEnabled(false)
		return
	}
	switch f.Name {
	case ":status":
		hb.status = f.Value
	case "content-type":
		hb.ctype = f.Value
	case "grpc-status":
		hb.grpcStatus, hb.hasStatus = f.Value, true
	case "grpc-message":
		hb.grpcMessage = f.Value
	}
}

// h2cStream is one call. The reader goroutine fills it under the
// connection's mu while it is in streams; once out of it, it is the
// caller's.
type h2cStream struct {
	id        uint32
	done      chan struct{} // receives once when the call ends
	timer     *time.Timer
	sendWin   int64
	recvAvail int64
	recvDone  int64

	h2cMsg
	ended    bool
	seen     uint64    // the connection's frame count when the call was sent
	sent     time.Time // when it was sent
	deadline time.Time
}

// h2cMsg is what the reader makes of a stream's answer. The reader reads a
// DATA frame's payload into a copy of it without holding cn.mu (the payload
// may be megabytes), and puts the copy back under cn.mu if the stream is
// still open: only the reader changes it while the stream is.
type h2cMsg struct {
	keep    bool
	max     int64
	headers bool // response headers seen
	prefix  [5]byte
	prefixN int
	msgLen  int64 // -1 until the prefix is complete, -2 once the message is
	got     int64
	msgs    int
	msg     []byte
	code    codes.Code
	message string
	err     error // transport or protocol failure
}

var h2cStreams = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &h2cStream{done: make(chan struct{}, 1), timer: t}
}}

func (s *h2cStream) reset(keep bool, max int64) {
	*s = h2cStream{done: s.done, timer: s.timer, h2cMsg: h2cMsg{keep: keep, max: max, msgLen: -1}}
}

// finish ends the stream under cn.mu: the caller is woken once.
func (cn *h2cConn) finish(s *h2cStream) {
	if s.ended {
		return
	}
	s.ended = true
	delete(cn.streams, s.id)
	cn.release()
	s.done <- struct{}{}
}

// release frees a stream slot under cn.mu.
func (cn *h2cConn) release() {
	cn.active--
	cn.notify()
	if cn.goAway && cn.active == 0 {
		cn.nc.Close()
	}
}

// notify wakes calls waiting for a stream slot or send window, under cn.mu.
func (cn *h2cConn) notify() {
	if cn.changed != nil {
		close(cn.changed)
		cn.changed = nil
	}
}

// wait returns a channel closed at the next change of slots or windows,
// under cn.mu.
func (cn *h2cConn) wait() <-chan struct{} {
	if cn.changed == nil {
		cn.changed = make(chan struct{})
	}
	return cn.changed
}

// conn returns a usable connection of a slot, dialling one if needed. Calls
// that find a dial under way wait for it until their deadline.
func (h *h2cClient) conn(ctx context.Context, deadline time.Time) (*h2cConn, error) {
	sl := h.slots[0]
	if len(h.slots) > 1 {
		sl = h.slots[(h.next.Add(1)-1)%uint64(len(h.slots))]
	}
	var timer *time.Timer
	for {
		sl.mu.Lock()
		if cn := sl.cn; cn != nil {
			cn.mu.Lock()
			ok := cn.err == nil && !cn.goAway
			cn.mu.Unlock()
			if ok {
				sl.mu.Unlock()
				return cn, nil
			}
		}
		if h.closed.Load() {
			sl.mu.Unlock()
			return nil, errors.New("client closed")
		}
		if sl.dialing == nil {
			break
		}
		ch := sl.dialing
		sl.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, context.DeadlineExceeded
		}
	}
	sl.dialing = make(chan struct{})
	sl.mu.Unlock()
	cn, err := h.dial(ctx, deadline)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	close(sl.dialing)
	sl.dialing = nil
	if err != nil {
		return nil, err
	}
	if h.closed.Load() { // Close ran during the dial
		cn.nc.Close()
		return nil, errors.New("client closed")
	}
	sl.cn = cn
	return cn, nil
}

// dial connects, exchanges the prefaces and waits for the server's
// SETTINGS, so that its stream limit holds from the first call.
func (h *h2cClient) dial(ctx context.Context, deadline time.Time) (*h2cConn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := h.dialer.DialContext(dctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	nc = rawtcp.Wrap(nc)
	cn := &h2cConn{
		nc: nc, h: h, bw: newH2CWriter(nc),
		streams: map[uint32]*h2cStream{}, nextID: 1,
		maxActive: 1 << 30, maxFrame: 16 << 10, initWin: 65535, sendWin: 65535,
		recvAvail: h2cConnWindow, direct: h2cDirect, br: bufio.NewReaderSize(nc, 32<<10),
	}
	cn.src.br = cn.br
	cn.fr = http2.NewFramer(cn.bw, cn.br)
	cn.fr.SetMaxReadFrameSize(h2cMaxFrame)
	cn.fr.SetReuseFrames()
	cn.dec = hpack.NewDecoder(4096, cn.onField)
	cn.dec.SetMaxStringLength(h.maxHead)

	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(aLongTimeAgo) })
	err = cn.handshake()
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("HTTP/2 handshake: %w", err)
	}
	nc.SetDeadline(time.Time{})
	go cn.readLoop()
	return cn, nil
}

func (cn *h2cConn) handshake() error {
	if _, err := io.WriteString(cn.bw, http2.ClientPreface); err != nil {
		return err
	}
	cn.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(h2cStreamWindow)},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: h2cMaxFrame},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(cn.h.maxHead)},
	)
	cn.fr.WriteWindowUpdate(0, h2cConnWindow-65535)
	if err := cn.bw.Flush(); err != nil {
		return err
	}
	f, err := cn.fr.ReadFrame()
	if err != nil {
		return err
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return fmt.Errorf("the server's first frame is %v, not SETTINGS", f.Header().Type)
	}
	if err := cn.applySettings(sf); err != nil {
		return err
	}
	cn.fr.WriteSettingsAck()
	return cn.bw.Flush()
}

// applySettings takes the peer's settings; under cn.mu or before the
// reader starts.
func (cn *h2cConn) applySettings(sf *http2.SettingsFrame) error {
	return sf.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			cn.maxActive = int(min(s.Val, 1<<30))
		case http2.SettingMaxFrameSize:
			cn.maxFrame = int(s.Val)
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - cn.initWin
			cn.initWin = int64(s.Val)
			for _, st := range cn.streams {
				st.sendWin += delta
			}
		}
		return nil
	})
}

// fail breaks the connection: every call on it fails with err.
func (cn *h2cConn) fail(err error) {
	cn.mu.Lock()
	if cn.err == nil {
		cn.err = err
	}
	for _, s := range cn.streams {
		s.err = err
		cn.finish(s)
	}
	cn.notify()
	cn.mu.Unlock()
	cn.nc.Close()
}

// errConnClosed reports a connection that ended while calls were open.
var errConnClosed = errors.New("connection closed")

// readLoop reads frames until the connection breaks, applying them to
// the connection and its streams.
func (cn *h2cConn) readLoop() {
	for {
		if _, readErr, err := cn.next(); err != nil {
			if readErr && errors.Is(err, io.EOF) {
				err = errConnClosed
			}
			cn.fail(err)
			return
		}
	}
}

// handle applies one frame; an error breaks the connection.
func (cn *h2cConn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		cn.frame.b = f.Data()
		return cn.onData(f.StreamID, f.Length, f.StreamEnded(), &cn.frame, len(cn.frame.b))
	case *http2.HeadersFrame:
		cn.hb = headerBlock{id: f.StreamID, endStream: f.StreamEnded(), limit: cn.h.maxHead}
		cn.dec.SetEmitEnabled(true)
		cn.inBlock = !f.HeadersEnded()
		return cn.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame: // the Framer checks that it follows HEADERS
		cn.inBlock = !f.HeadersEnded()
		return cn.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.RSTStreamFrame:
		cn.mu.Lock()
		if s := cn.streams[f.StreamID]; s != nil {
			s.code, s.message = rstCode(f.ErrCode), fmt.Sprintf("stream reset by the server: %v", f.ErrCode)
			if f.ErrCode == http2.ErrCodeRefusedStream {
				s.err = ErrNotProcessed
			}
			if s.code == codes.Canceled && !time.Now().Before(s.deadline) {
				// The server cancels calls past the grpc-timeout sent:
				// that is the deadline (as grpc-go's client reports it).
				s.code = codes.DeadlineExceeded
			}
			cn.finish(s)
		}
		cn.mu.Unlock()
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		cn.mu.Lock()
		err := cn.applySettings(f)
		cn.notify()
		cn.mu.Unlock()
		if err != nil {
			return err
		}
		return cn.write(func() error { return cn.fr.WriteSettingsAck() })
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		data := f.Data
		return cn.write(func() error { return cn.fr.WritePing(true, data) })
	case *http2.WindowUpdateFrame:
		cn.mu.Lock()
		defer cn.mu.Unlock()
		if f.StreamID == 0 {
			cn.sendWin += int64(f.Increment)
			if cn.sendWin > 1<<31-1 {
				return errors.New("flow control window overflow")
			}
		} else if s := cn.streams[f.StreamID]; s != nil {
			s.sendWin += int64(f.Increment)
		}
		cn.notify()
	case *http2.GoAwayFrame:
		cn.mu.Lock()
		cn.goAway, cn.lastID = true, f.LastStreamID
		for id, s := range cn.streams {
			if id > f.LastStreamID {
				// Not processed: the server says so.
				s.code, s.message = codes.Unavailable, fmt.Sprintf("the server sent GOAWAY (%v) before this call", f.ErrCode)
				s.err = ErrNotProcessed
				cn.finish(s)
			}
		}
		if cn.active == 0 {
			cn.nc.Close()
		}
		cn.notify()
		cn.mu.Unlock()
	case *http2.PushPromiseFrame:
		return errors.New("PUSH_PROMISE with push disabled")
	}
	return nil
}

// headerFragment decodes a piece of a header block; at its end the block
// goes to its stream. The decoder's state is the connection's, so every
// block is decoded, whichever stream it is for.
func (cn *h2cConn) headerFragment(frag []byte, end bool) error {
	// The decoded size is bounded by onField; this bounds the time spent
	// on a block that never ends (a CONTINUATION flood).
	if cn.hb.wire += len(frag); cn.hb.wire > cn.h.maxHead {
		return fmt.Errorf("%w: header block exceeds %d bytes (--max-header-bytes)", ErrMalformedResponse, cn.h.maxHead)
	}
	if _, err := cn.dec.Write(frag); err != nil {
		return fmt.Errorf("%w: header block: %w", ErrMalformedResponse, err)
	}
	if !end {
		return nil
	}
	if err := cn.dec.Close(); err != nil {
		return fmt.Errorf("%w: header block: %w", ErrMalformedResponse, err)
	}
	hb := &cn.hb
	cn.mu.Lock()
	s := cn.streams[hb.id]
	if s == nil {
		cn.mu.Unlock()
		return nil
	}
	s.onHeaders(hb)
	if s.err == nil && s.code == codes.OK && !hb.endStream {
		cn.mu.Unlock()
		return nil
	}
	cn.finish(s)
	cn.mu.Unlock()
	if !hb.endStream {
		cn.resetStream(hb.id, http2.ErrCodeCancel)
	}
	return nil
}

// onHeaders takes the response headers or trailers, under cn.mu.
func (s *h2cStream) onHeaders(hb *headerBlock) {
	if hb.size > hb.limit {
		s.err = fmt.Errorf("%w: response header list exceeds %d bytes (--max-header-bytes)", ErrMalformedResponse, hb.limit)
		return
	}
	first := !s.headers
	s.headers = true
	status, ctype, grpcStatus, grpcMessage, hasStatus := hb.status, hb.ctype, hb.grpcStatus, hb.grpcMessage, hb.hasStatus
	if first && hasStatus && hb.endStream && status == "200" {
		// Trailers-only: the status is all there is (content-type is
		// not checked, as grpc-go does not).
		first = false
	}
	if first {
		if status != "200" {
			c, _ := strconv.Atoi(status)
			s.code, s.message = httpStatusCode(c), fmt.Sprintf("unexpected HTTP status %q", status)
			if s.code == codes.OK {
				s.code = codes.Unknown
			}
			return
		}
		if ctype != "application/grpc" && !strings.HasPrefix(ctype, "application/grpc+") && !strings.HasPrefix(ctype, "application/grpc;") {
			s.code, s.message = codes.Unknown, fmt.Sprintf("unexpected content-type %q", ctype)
			return
		}
	} else if !hb.endStream {
		s.err = fmt.Errorf("%w: a second HEADERS frame that does not end the stream", ErrMalformedResponse)
		return
	}
	if !hb.endStream {
		return
	}
	if !hasStatus {
		s.code, s.message = codes.Internal, "the server's trailers lack grpc-status"
		return
	}
	// Read as grpc-go reads it: "+0" is OK, "-1" is code 4294967295.
	n, err := strconv.ParseInt(grpcStatus, 10, 32)
	if err != nil {
		s.code, s.message = codes.Internal, fmt.Sprintf("malformed grpc-status %q", grpcStatus)
		return
	}
	s.code, s.message = codes.Code(uint32(n)), decodeGRPCMessage(grpcMessage)
	// prefixN > 0: bytes of a second message's prefix followed the
	// message (grpc-go's reader fails on them: an unexpected EOF).
	if s.code == codes.OK && (s.msgs != 1 || s.msgLen >= 0 || s.prefixN > 0) {
		s.code, s.message = codes.Internal, fmt.Sprintf("the server sent %d messages, want 1", s.msgs)
		if s.msgLen >= 0 {
			s.message = "the server's message ended early"
		} else if s.prefixN > 0 {
			s.message = fmt.Sprintf("the server sent %d bytes after its message", s.prefixN)
		}
	}
}

// onData consumes a DATA frame of length bytes (padding included) for
// stream id whose payload, n bytes, src holds: flow control, then the gRPC
// message. A failure of src is the caller's to report.
func (cn *h2cConn) onData(id uint32, length uint32, end bool, src h2cSource, n int) error {
	var connInc, streamInc uint32
	cn.mu.Lock()
	if cn.recvAvail -= int64(length); cn.recvAvail < 0 {
		cn.mu.Unlock()
		return errors.New("the server overran the connection's flow-control window")
	}
	// Every byte is given back to the connection, whatever happens to the
	// stream.
	if cn.recvDone += int64(length); cn.recvDone >= h2cConnWindow/2 {
		connInc, cn.recvAvail, cn.recvDone = uint32(cn.recvDone), cn.recvAvail+cn.recvDone, 0
	}
	s := cn.streams[id]
	m := &cn.msg // the reader's own, not on its stack: consume's reads would move it to the heap
	overrun := false
	if s != nil {
		s.recvAvail -= int64(length)
		overrun = s.recvAvail < 0
		*m = s.h2cMsg
	}
	cn.mu.Unlock()

	// The payload is read whatever becomes of the stream, and before any
	// verdict on it, as the Framer reads a whole frame first.
	rest := n
	if s != nil && !overrun {
		var err error
		if rest, err = m.consume(src, n); err != nil {
			return err
		}
	}
	if err := src.skip(rest); err != nil {
		return err
	}

	var rst http2.ErrCode
	cn.mu.Lock()
	if s != nil && !s.ended && cn.streams[id] == s {
		s.h2cMsg = *m
		if overrun {
			s.err, rst = errors.New("the server overran the stream's flow-control window"), http2.ErrCodeFlowControl
		} else if s.code != codes.OK || s.err != nil {
			rst = http2.ErrCodeCancel
		} else if !end {
			if s.recvDone += int64(length); s.recvDone >= int64(h2cStreamWindow)/2 {
				streamInc, s.recvAvail, s.recvDone = uint32(s.recvDone), s.recvAvail+s.recvDone, 0
			}
		}
		if rst != 0 || end {
			if rst == 0 { // DATA ended the stream: no trailers
				s.code, s.message = codes.Internal, "the server ended the stream without trailers"
			}
			cn.finish(s)
		}
	}
	cn.mu.Unlock()
	return cn.dataDone(id, connInc, streamInc, rst)
}

// dataDone sends what a DATA frame calls for: window updates, a reset.
func (cn *h2cConn) dataDone(id, connInc, streamInc uint32, rst http2.ErrCode) error {
	if connInc == 0 && streamInc == 0 && rst == 0 {
		return nil
	}
	return cn.write(func() error {
		if connInc > 0 {
			cn.fr.WriteWindowUpdate(0, connInc)
		}
		if streamInc > 0 {
			cn.fr.WriteWindowUpdate(id, streamInc)
		}
		if rst != 0 {
			cn.fr.WriteRSTStream(id, rst)
		}
		return nil
	})
}

// consume takes n message bytes from src, checking the gRPC framing. After
// a verdict (code or err set) it stops: rest is the bytes it left in src.
// err is src's failure.
func (m *h2cMsg) consume(src h2cSource, n int) (rest int, err error) {
	if !m.headers {
		m.err = fmt.Errorf("%w: DATA before the response headers", ErrMalformedResponse)
		return n, nil
	}
	for n > 0 {
		if m.msgLen < 0 {
			k := min(n, 5-m.prefixN)
			if err := src.read(m.prefix[m.prefixN : m.prefixN+k]); err != nil {
				return 0, err
			}
			m.prefixN += k
			n -= k
			if m.prefixN < 5 {
				return n, nil
			}
			if m.msgs++; m.msgs > 1 {
				m.code, m.message = codes.Internal, "the server sent more than one message"
				return n, nil
			}
			if m.prefix[0] != 0 {
				m.code, m.message = codes.Internal, fmt.Sprintf("compressed flag %d set without compression", m.prefix[0])
				return n, nil
			}
			m.msgLen = int64(binary.BigEndian.Uint32(m.prefix[1:]))
			if m.msgLen > m.max {
				m.code = codes.ResourceExhausted
				m.message = fmt.Sprintf("received message larger than max (%d vs. %d; --grpc-max-message-bytes)", m.msgLen, m.max)
				m.err = fmt.Errorf("%w: message of %d bytes exceeds %d", ErrResponseTooLarge, m.msgLen, m.max)
				return n, nil
			}
			if m.keep {
				m.msg = make([]byte, m.msgLen)
			}
		}
		k := int(min(int64(n), m.msgLen-m.got))
		if m.keep {
			err = src.read(m.msg[m.got : m.got+int64(k)])
		} else {
			err = src.skip(k)
		}
		if err != nil {
			return 0, err
		}
		m.got += int64(k)
		n -= k
		if m.got == m.msgLen {
			m.msgLen, m.prefixN = -2, 0 // complete; a further prefix is an error
		}
	}
	return 0, nil
}

// write runs fn under the write lock and flushes; a failed write breaks the
// connection.
func (cn *h2cConn) write(fn func() error) error {
	cn.lockW()
	return cn.unlockW(fn())
}

// lockW takes wmu, counted as queued while it waits (see unlockW).
func (cn *h2cConn) lockW() {
	cn.queued.Add(1)
	cn.wmu.Lock()
	cn.queued.Add(-1)
}

// unlockW releases wmu after a write that ended with err. Unless a call is
// queued for wmu (which will flush in turn) it flushes first.
func (cn *h2cConn) unlockW(err error) error {
	if err == nil && cn.queued.Load() == 0 {
		err = cn.bw.Flush()
	}
	cn.wmu.Unlock()
	return err
}

func (cn *h2cConn) resetStream(id uint32, code http2.ErrCode) {
	if err := cn.write(func() error { return cn.fr.WriteRSTStream(id, code) }); err != nil {
		cn.fail(err)
	}
}

// call sends body (the gRPC-framed request) and waits for the answer.
func (h *h2cClient) call(ctx context.Context, body []byte, keep bool) ([]byte, error) {
	const op = "Infer"
	deadline := time.Now().Add(h.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(op, err)
	}
	s := h2cStreams.Get().(*h2cStream)
	s.timer.Reset(time.Until(deadline))
	defer func() {
		s.timer.Stop()
		s.msg = nil
		h2cStreams.Put(s)
	}()
	var cn *h2cConn
	for attempt := 0; ; attempt++ {
		var err error
		if cn, err = h.conn(ctx, deadline); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, ctxError(op, cerr)
			}
			if time.Now().After(deadline) {
				return nil, ctxError(op, context.DeadlineExceeded)
			}
			return nil, &Error{Op: op, GRPCCode: codes.Unavailable, Message: err.Error(), Err: err}
		}
		s.reset(keep, h.max)
		unsent, err := cn.send(ctx, s, body, deadline)
		if unsent && attempt < 2 {
			// The connection broke or began to close before the call
			// went out: another connection may take it.
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, cn.abandon(s, op, ctx.Err(), false)
	case <-s.timer.C:
		return nil, cn.abandon(s, op, context.DeadlineExceeded, true)
	}
	return s.result(op)
}

// result is the call's outcome once the stream ended.
func (s *h2cStream) result(op string) ([]byte, error) {
	switch {
	case s.err != nil && s.code == codes.OK:
		return nil, &Error{Op: op, GRPCCode: codes.Unavailable, Message: s.err.Error(), Err: s.err}
	case s.code != codes.OK:
		e := &Error{Op: op, GRPCCode: s.code, Message: s.message, Err: s.err}
		if s.code == codes.DeadlineExceeded {
			// The server enforces the grpc-timeout sent (as grpc-go's client).
			e.Err = context.DeadlineExceeded
		}
		return nil, e
	}
	msg := s.msg
	s.msg = nil
	if msg == nil && s.keep {
		msg = []byte{}
	}
	if s.keep {
		if err := checkKeptAnswer(op, msg, s.max); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

func ctxError(op string, err error) *Error {
	code := codes.Canceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded
	}
	return &Error{Op: op, GRPCCode: code, Message: err.Error(), Err: err}
}

// hungAfter is how long a connection must stay silent, with a call
// waiting on it, to be taken for hung. Short timeouts (a server slower than
// them) must not make every timeout close the connection and fail its
// other calls. (A variable for tests.)
var hungAfter = time.Second

// abandon ends a call that its context or deadline ended before the
// answer: the stream is reset. If the call waited for its answer until the
// deadline (waited), at least hungAfter, and nothing at all came from the
// server meanwhile, the connection is taken for hung and closed, so that
// the next call dials afresh.
func (cn *h2cConn) abandon(s *h2cStream, op string, cause error, waited bool) error {
	cn.mu.Lock()
	if s.ended { // the answer came meanwhile
		cn.mu.Unlock()
		<-s.done
		return ctxError(op, cause)
	}
	s.ended = true
	delete(cn.streams, s.id)
	cn.release()
	cn.mu.Unlock()
	if waited && cn.frames.Load() == s.seen && time.Since(s.sent) >= hungAfter {
		cn.fail(fmt.Errorf("no answer from the server within the deadline"))
	} else {
		cn.resetStream(s.id, http2.ErrCodeCancel)
	}
	return ctxError(op, cause)
}

// send opens the call's stream and writes the request, within the
// peer's stream limit and flow-control windows.
func (cn *h2cConn) send(ctx context.Context, s *h2cStream, body []byte, deadline time.Time) (unsent bool, err error) {
	const op = "Infer"
	// A stream slot first, without holding the write lock.
	cn.mu.Lock()
	for {
		if cn.err != nil || cn.goAway {
			err := cn.unusable()
			cn.mu.Unlock()
			return true, err
		}
		if cn.active < cn.maxActive {
			cn.active++
			break
		}
		ch := cn.wait()
		cn.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctxError(op, ctx.Err())
		case <-s.timer.C:
			return false, ctxError(op, context.DeadlineExceeded)
		}
		cn.mu.Lock()
	}
	cn.mu.Unlock()

	// Stream ids must reach the wire in increasing order: the id is taken
	// under the write lock.
	cn.lockW()
	now := time.Now()
	if !now.Before(deadline) { // waited for the lock past the deadline: not sent
		cn.mu.Lock()
		cn.release()
		cn.mu.Unlock()
		if werr := cn.unlockW(nil); werr != nil {
			cn.fail(werr)
		}
		return false, ctxError(op, context.DeadlineExceeded)
	}
	cn.mu.Lock()
	if cn.err != nil || cn.goAway {
		err := cn.unusable()
		cn.release()
		cn.mu.Unlock()
		if werr := cn.unlockW(nil); werr != nil {
			cn.fail(werr)
		}
		return true, err
	}
	s.id = cn.nextID
	if cn.nextID += 2; cn.nextID > 1<<31-1 {
		cn.goAway = true // ids used up: the next call dials a new connection
	}
	s.sendWin, s.recvAvail, s.seen = cn.initWin, int64(h2cStreamWindow), cn.frames.Load()
	s.sent, s.deadline = now, deadline
	cn.streams[s.id] = s
	maxFrame := cn.maxFrame
	cn.mu.Unlock()

	// Writes only block on a peer that stops reading; the write deadline
	// ends them then, a little after the call's deadline (set about once a
	// second, not per call). A write that times out breaks the connection.
	if cn.wdead.Before(deadline) {
		cn.wdead = deadline.Add(time.Second)
		cn.nc.SetWriteDeadline(cn.wdead)
	}
	cn.hdr = appendGRPCTimeout(append(cn.hdr[:0], cn.h.block...), time.Until(deadline))
	err = cn.writeHeaders(s.id, cn.hdr, maxFrame)
	for err == nil && len(body) > 0 {
		cn.mu.Lock()
		if s.ended { // reset or failed meanwhile: the answer is known
			cn.mu.Unlock()
			break
		}
		n := min(int64(len(body)), cn.sendWin, s.sendWin, int64(cn.maxFrame))
		if n <= 0 {
			ch := cn.wait()
			cn.mu.Unlock()
			if err = cn.bw.Flush(); err != nil {
				break
			}
			cn.wmu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return false, cn.abandon(s, op, ctx.Err(), false)
			case <-s.timer.C:
				return false, cn.abandon(s, op, context.DeadlineExceeded, false)
			}
			cn.lockW()
			continue
		}
		cn.sendWin -= n
		s.sendWin -= n
		cn.mu.Unlock()
		if end := int64(len(body)) == n; cn.direct && n >= h2cWritevMin {
			err = cn.bw.writeData(s.id, end, body[:n]) // no copy of the request
		} else {
			err = cn.fr.WriteData(s.id, end, body[:n])
		}
		body = body[n:]
	}
	if err = cn.unlockW(err); err != nil {
		cn.fail(err) // the answer is this error
	}
	return false, nil
}

// unusable is the error of a call on a broken or closing connection,
// under cn.mu.
func (cn *h2cConn) unusable() error {
	err := cn.err
	if err == nil {
		err = fmt.Errorf("%w: the server sent GOAWAY", ErrNotProcessed)
	}
	return &Error{Op: "Infer", GRPCCode: codes.Unavailable, Message: err.Error(), Err: err}
}

// writeHeaders writes a header block in HEADERS and CONTINUATION frames of
// at most maxFrame bytes, under wmu.
func (cn *h2cConn) writeHeaders(id uint32, block []byte, maxFrame int) error {
	first := block[:min(len(block), maxFrame)]
	block = block[len(first):]
	err := cn.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(block) == 0})
	for err == nil && len(block) > 0 {
		frag := block[:min(len(block), maxFrame)]
		block = block[len(frag):]
		err = cn.fr.WriteContinuation(id, len(block) == 0, frag)
	}
	return err
}

// appendGRPCTimeout appends grpc-timeout for d as a literal field without
// indexing: at most 8 digits and a unit, rounded up.
func appendGRPCTimeout(b []byte, d time.Duration) []byte {
	const name = "grpc-timeout"
	if d <= 0 {
		d = 1
	}
	var unit byte
	var n int64
	for _, u := range []struct {
		d time.Duration
		c byte
	}{{time.Nanosecond, 'n'}, {time.Microsecond, 'u'}, {time.Millisecond, 'm'}, {time.Second, 'S'}, {time.Minute, 'M'}, {time.Hour, 'H'}} {
		// Rounded up without d+u.d-1, which overflows near the largest d.
		n, unit = int64(d/u.d), u.c
		if d%u.d != 0 {
			n++
		}
		if n <= 99999999 {
			break
		}
	}
	b = append(b, 0x00, byte(len(name)))
	b = append(b, name...)
	var digits [24]byte
	v := strconv.AppendInt(digits[:0], n, 10)
	b = append(b, byte(len(v)+1))
	b = append(b, v...)
	return append(b, unit)
}

// close closes the connection; calls on it fail.
func (h *h2cClient) close() {
	h.closed.Store(true)
	for _, sl := range h.slots {
		sl.mu.Lock()
		if sl.cn != nil {
			sl.cn.fail(errors.New("client closed"))
		}
		sl.mu.Unlock()
	}
}

// rstCode maps an RST_STREAM error code to a gRPC code as grpc-go does.
func rstCode(c http2.ErrCode) codes.Code {
	switch c {
	case http2.ErrCodeRefusedStream:
		return codes.Unavailable
	case http2.ErrCodeCancel:
		return codes.Canceled
	case http2.ErrCodeEnhanceYourCalm:
		return codes.ResourceExhausted
	case http2.ErrCodeInadequateSecurity:
		return codes.PermissionDenied
	}
	return codes.Internal
}

// httpStatusCode maps a non-200 HTTP status to a gRPC code as grpc-go does.
func httpStatusCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

// decodeGRPCMessage undoes grpc-message's percent-encoding; malformed
// escapes are kept as they are.
func decodeGRPCMessage(m string) string {
	if strings.IndexByte(m, '%') < 0 {
		return m
	}
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		if m[i] == '%' && i+2 < len(m) {
			if v, err := strconv.ParseUint(m[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(m[i])
	}
	return b.String()
}
