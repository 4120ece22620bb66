package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// h2cServer is a grpc-go server for the lean transport's tests. Model
// "echo" answers with its raw inputs as raw outputs, "fail" with
// FAILED_PRECONDITION, "hang" when the call's context ends, "slow" after
// 20 ms (counting the calls in progress at once).
type h2cServer struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	mu      sync.Mutex
	md      metadata.MD
	peers   map[string]bool // client addresses seen
	now     atomic.Int32
	maxSeen atomic.Int32
}

func (s *h2cServer) ModelInfer(ctx context.Context, r *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.md = md
	if p, ok := peer.FromContext(ctx); ok {
		if s.peers == nil {
			s.peers = map[string]bool{}
		}
		s.peers[p.Addr.String()] = true
	}
	s.mu.Unlock()
	switch r.ModelName {
	case "fail":
		return nil, status.Error(codes.FailedPrecondition, "bad 100% input\nsecond line")
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	case "slow":
		n := s.now.Add(1)
		defer s.now.Add(-1)
		for {
			m := s.maxSeen.Load()
			if n <= m || s.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &inferencepb.ModelInferResponse{ModelName: r.ModelName, Id: r.Id, RawOutputContents: r.RawInputContents}, nil
}

func startH2CServer(t *testing.T, opts ...grpc.ServerOption) (*h2cServer, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	s := &h2cServer{}
	inferencepb.RegisterGRPCInferenceServiceServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return s, lis.Addr().String()
}

func newTestGRPC(t *testing.T, addr string, opts Options) *GRPC {
	t.Helper()
	c, err := NewGRPC(addr, true, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func prepare(t *testing.T, c *GRPC, model string, raw ...[]byte) (*PreparedGRPCInfer, *inferencepb.ModelInferRequest) {
	t.Helper()
	req := &inferencepb.ModelInferRequest{ModelName: model, Id: "id-1", RawInputContents: raw}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PrepareInfer(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.wire == nil {
		t.Fatal("plaintext target not on the lean transport")
	}
	return p, req
}

func checkEcho(t *testing.T, b []byte, req *inferencepb.ModelInferRequest) {
	t.Helper()
	want, _ := proto.Marshal(&inferencepb.ModelInferResponse{ModelName: req.ModelName, Id: req.Id, RawOutputContents: req.RawInputContents})
	if !bytes.Equal(b, want) {
		t.Fatalf("response: %d bytes, want the %d of the echo", len(b), len(want))
	}
}

func TestH2CSuccessAndMetadata(t *testing.T) {
	s, addr := startH2CServer(t)
	h := map[string][]string{"Authorization": {"Bearer x"}, "X-Trace": {"a", "b"}, "X-Blob-Bin": {"\x00\x01"}}
	c := newTestGRPC(t, addr, Options{Header: h, Host: "infer.example"})
	p, req := prepare(t, c, "echo", []byte("0123456789abcdef"))
	for range 3 { // the connection is reused
		b, err := p.Send(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		checkEcho(t, b, req)
	}
	if b, err := p.Send(context.Background(), false); err != nil || b != nil {
		t.Fatalf("Send(keep=false) = %v, %v; want nil, nil", b, err)
	}
	s.mu.Lock()
	md := s.md
	s.mu.Unlock()
	for k, want := range map[string][]string{
		"authorization": {"Bearer x"}, "x-trace": {"a", "b"}, ":authority": {"infer.example"}, "x-blob-bin": {"\x00\x01"},
		"content-type": {"application/grpc"},
	} {
		if got := md.Get(k); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("metadata %s = %q, want %q", k, got, want)
		}
	}
	if ua := md.Get("user-agent"); len(ua) != 1 || !strings.HasPrefix(ua[0], userAgent) {
		t.Errorf("user-agent = %q, want %s first", ua, userAgent)
	}
}

func TestH2CStatusError(t *testing.T) {
	_, addr := startH2CServer(t)
	c := newTestGRPC(t, addr, Options{})
	p, _ := prepare(t, c, "fail")
	_, err := p.Send(context.Background(), true)
	var ce *Error
	if !errors.As(err, &ce) || ce.GRPCCode != codes.FailedPrecondition || ce.Message != "bad 100% input\nsecond line" {
		t.Fatalf("err = %#v, want FAILED_PRECONDITION with the server's message", err)
	}
	if st, ok := status.FromError(err); !ok || st.Code() != codes.FailedPrecondition {
		t.Fatalf("status.FromError = %v, %v", st, ok)
	}
	// The connection stays usable.
	p2, req := prepare(t, c, "echo", []byte("x"))
	b, err := p2.Send(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, b, req)
}

func TestH2CDeadline(t *testing.T) {
	_, addr := startH2CServer(t)
	c := newTestGRPC(t, addr, Options{Timeout: 200 * time.Millisecond})
	p, _ := prepare(t, c, "hang")
	start := time.Now()
	_, err := p.Send(context.Background(), false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if st, _ := status.FromError(err); st.Code() != codes.DeadlineExceeded {
		t.Fatalf("code %v, want DEADLINE_EXCEEDED", st.Code())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %v with a 200ms timeout", d)
	}
	// The context's own cancellation ends a call too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := p.Send(ctx, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
}

// TestH2CMaxConcurrentStreams: 8 calls at once on a server that takes one
// stream at a time all succeed, one after another.
func TestH2CMaxConcurrentStreams(t *testing.T) {
	s, addr := startH2CServer(t, grpc.MaxConcurrentStreams(1))
	c := newTestGRPC(t, addr, Options{})
	p, req := prepare(t, c, "slow", []byte("abc"))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			b, err := p.Send(context.Background(), true)
			if err == nil && !bytes.Equal(b, mustMarshal(&inferencepb.ModelInferResponse{ModelName: req.ModelName, Id: req.Id, RawOutputContents: req.RawInputContents})) {
				err = errors.New("wrong answer")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m := s.maxSeen.Load(); m != 1 {
		t.Fatalf("%d calls ran at once, want 1", m)
	}
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// TestH2CFlowControl sends and receives 1 MiB through 64 KiB windows both
// ways (the server's, and ours shrunk for the test).
func TestH2CFlowControl(t *testing.T) {
	defer func(w int32) { h2cStreamWindow = w }(h2cStreamWindow)
	h2cStreamWindow = 65535
	_, addr := startH2CServer(t, grpc.InitialWindowSize(65535), grpc.InitialConnWindowSize(65535))
	c := newTestGRPC(t, addr, Options{Connections: 2})
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	p, req := prepare(t, c, "echo", big)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			b, err := p.Send(context.Background(), true)
			if err != nil {
				t.Error(err)
				return
			}
			checkEcho(t, b, req)
		})
	}
	wg.Wait()
}

func TestH2CResponseTooLarge(t *testing.T) {
	_, addr := startH2CServer(t)
	c := newTestGRPC(t, addr, Options{MaxResponseBytes: 1000})
	p, _ := prepare(t, c, "echo", make([]byte, 2000))
	_, err := p.Send(context.Background(), true)
	var ce *Error
	if !errors.As(err, &ce) || ce.GRPCCode != codes.ResourceExhausted || !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("err = %v, want RESOURCE_EXHAUSTED wrapping ErrResponseTooLarge", err)
	}
	p2, req := prepare(t, c, "echo", make([]byte, 100))
	b, err := p2.Send(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, b, req)
}

// rawH2Server serves each connection with handle after the HTTP/2 prefaces.
func rawH2Server(t *testing.T, handle func(n int, nc net.Conn, fr *http2.Framer)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for n := 0; ; n++ {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				pre := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, pre); err != nil {
					return
				}
				fr := http2.NewFramer(nc, nc)
				fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				fr.WriteSettings()
				handle(n, nc, fr)
			}()
		}
	}()
	t.Cleanup(func() { lis.Close() })
	return lis.Addr().String()
}

// answer reads frames up to the next request's end and answers it with msg.
func answer(fr *http2.Framer, msg []byte) error {
	var id uint32
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		if f.Header().Type == http2.FrameSettings && !f.(*http2.SettingsFrame).IsAck() {
			fr.WriteSettingsAck()
		}
		if (f.Header().Type == http2.FrameData || f.Header().Type == http2.FrameHeaders) && f.Header().Flags.Has(http2.FlagDataEndStream) {
			id = f.Header().StreamID
			break
		}
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
	fr.WriteData(id, false, append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...))
	hb.Reset()
	enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
	return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
}

// TestH2CConnectionLost: a server that drops the connection mid-call fails
// that call; the next one dials a new connection.
func TestH2CConnectionLost(t *testing.T) {
	var dropped atomic.Bool
	addr := rawH2Server(t, func(n int, nc net.Conn, fr *http2.Framer) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
				fr.WriteSettingsAck()
			}
			if f.Header().Type == http2.FrameHeaders {
				if dropped.CompareAndSwap(false, true) {
					return // closes the connection mid-call
				}
				break
			}
		}
		for answer(fr, []byte("hello")) == nil {
		}
	})
	c := newTestGRPC(t, addr, Options{Timeout: 5 * time.Second})
	p, err := c.PrepareInfer([]byte("req"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Send(context.Background(), true)
	var ce *Error
	if !errors.As(err, &ce) || ce.GRPCCode != codes.Unavailable || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want UNAVAILABLE (connection lost)", err)
	}
	for range 2 {
		b, err := p.Send(context.Background(), true)
		if err != nil || string(b) != "hello" {
			t.Fatalf("after a redial: %q, %v", b, err)
		}
	}
}

// TestH2CHungServer: a server that accepts the call and never answers ends
// it at the deadline; the connection is then replaced.
func TestH2CHungServer(t *testing.T) {
	defer func(d time.Duration) { hungAfter = d }(hungAfter)
	hungAfter = 50 * time.Millisecond
	var mu sync.Mutex
	callsOn := map[int]int{} // calls per connection
	addr := rawH2Server(t, func(n int, nc net.Conn, fr *http2.Framer) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if f.Header().Type == http2.FrameHeaders {
				mu.Lock()
				callsOn[n]++
				mu.Unlock()
			}
		}
	})
	c := newTestGRPC(t, addr, Options{Timeout: 100 * time.Millisecond})
	p, _ := c.PrepareInfer([]byte("req"))
	for range 2 {
		if _, err := p.Send(context.Background(), false); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(callsOn) != 2 {
		t.Fatalf("calls per connection %v, want one call on each of 2 (the hung one replaced)", callsOn)
	}
}

// TestH2CShortTimeouts: calls that time out on a slow server (silent for
// less than hungAfter) leave the connection, and other calls on it, alone.
func TestH2CShortTimeouts(t *testing.T) {
	s, addr := startH2CServer(t)
	c := newTestGRPC(t, addr, Options{Timeout: 5 * time.Millisecond})
	slow, _ := prepare(t, c, "hang")
	for range 3 {
		if _, err := slow.Send(context.Background(), false); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	}
	c.opts.Timeout = time.Second
	c.h2.timeout = time.Second
	p, req := prepare(t, c, "echo", []byte("x"))
	b, err := p.Send(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, b, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.peers) != 1 {
		t.Fatalf("%d connections, want 1: short timeouts closed the connection", len(s.peers))
	}
}

// TestH2CHostileServer: garbage after the prefaces, random and mutated
// frames, ends calls with an error, never a hang or a panic.
func TestH2CHostileServer(t *testing.T) {
	good := func() []byte {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
		fr.WriteData(1, false, []byte{0, 0, 0, 0, 2, 'o', 'k'})
		hb.Reset()
		enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
		return b.Bytes()
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 120 {
		reply := bytes.Clone(good)
		switch i % 3 {
		case 0: // mutate bytes
			for range 1 + rng.IntN(4) {
				reply[rng.IntN(len(reply))] = byte(rng.Uint32())
			}
		case 1: // truncate
			reply = reply[:rng.IntN(len(reply))]
		case 2: // random bytes
			reply = make([]byte, rng.IntN(64))
			for j := range reply {
				reply[j] = byte(rng.Uint32())
			}
		}
		addr := rawH2Server(t, func(n int, nc net.Conn, fr *http2.Framer) {
			nc.Write(reply)
			if i%2 == 0 { // then keeps the connection open
				io.Copy(io.Discard, nc)
			}
		})
		c, err := NewGRPC(addr, true, Options{Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := c.PrepareInfer([]byte("req"))
		b, err := p.Send(context.Background(), true)
		if err == nil && string(b) != "ok" {
			t.Fatalf("case %d: %q accepted as %q", i, reply, b)
		}
		c.Close()
	}
}

func TestH2CGRPCTimeout(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1n"}, {10 * time.Second, "10000000u"}, {100 * time.Second, "100000m"},
		{1500 * time.Microsecond, "1500000n"}, {30 * 24 * time.Hour, "2592000S"}, {0, "1n"},
	} {
		dec := hpack.NewDecoder(4096, nil)
		fs, err := dec.DecodeFull(appendGRPCTimeout(nil, tc.d))
		if err != nil || len(fs) != 1 || fs[0].Name != "grpc-timeout" || fs[0].Value != tc.want {
			t.Errorf("%v: %v, %v; want grpc-timeout: %s", tc.d, fs, err, tc.want)
		}
	}
}

func TestH2CInvalidMetadata(t *testing.T) {
	_, err := newH2C("127.0.0.1:1", Options{Connections: 1}, []string{"x-bad", "a\nb"})
	if err == nil {
		t.Fatal("a header value with a newline accepted")
	}
	if _, err := newH2C("127.0.0.1:1", Options{Connections: 1}, []string{"grpc-timeout", "1S"}); err == nil {
		t.Fatal("a reserved header accepted")
	}
}

// TestH2CGoAway: a server that ages its connections out (GOAWAY, then
// close) loses no call: streams it accepted finish, later calls dial anew.
func TestH2CGoAway(t *testing.T) {
	s, addr := startH2CServer(t, grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge: 50 * time.Millisecond, MaxConnectionAgeGrace: time.Second,
	}))
	c := newTestGRPC(t, addr, Options{})
	p, req := prepare(t, c, "echo", []byte("abc"))
	var wg sync.WaitGroup
	var calls, unavailable atomic.Int32
	stop := time.Now().Add(400 * time.Millisecond)
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				calls.Add(1)
				b, err := p.Send(context.Background(), true)
				var ce *Error
				if errors.As(err, &ce) && ce.GRPCCode == codes.Unavailable && strings.Contains(ce.Message, "GOAWAY") {
					unavailable.Add(1) // sent after the GOAWAY's last stream: not processed
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				checkEcho(t, b, req)
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	conns := len(s.peers)
	s.mu.Unlock()
	t.Logf("%d calls on %d connections, %d refused by GOAWAY", calls.Load(), conns, unavailable.Load())
	if conns < 3 {
		t.Errorf("the calls used %d connections; the server's GOAWAYs did not happen or were not followed", conns)
	}
	if unavailable.Load()*10 > calls.Load() {
		t.Errorf("%d of %d calls refused by GOAWAY", unavailable.Load(), calls.Load())
	}
}

// TestH2CDialWait: calls that wait for another call's dial to a server that
// never completes the HTTP/2 handshake end at their own deadline.
func TestH2CDialWait(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			defer nc.Close() // silent: no SETTINGS
		}
	}()
	c := newTestGRPC(t, lis.Addr().String(), Options{Timeout: 100 * time.Millisecond})
	p, _ := c.PrepareInfer([]byte("req"))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := p.Send(context.Background(), false); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want DeadlineExceeded", err)
			}
		})
	}
	wg.Wait()
}

// TestH2CContinuationFlood: a header block that never ends breaks the
// connection rather than being read forever.
func TestH2CContinuationFlood(t *testing.T) {
	addr := rawH2Server(t, func(n int, nc net.Conn, fr *http2.Framer) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if f.Header().Type == http2.FrameData {
				break
			}
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}})
		junk := bytes.Repeat([]byte{0x88}, 16<<10) // ":status: 200", again and again
		for fr.WriteContinuation(1, false, junk) == nil {
		}
	})
	c := newTestGRPC(t, addr, Options{Timeout: 10 * time.Second})
	p, _ := c.PrepareInfer([]byte("req"))
	_, err := p.Send(context.Background(), false)
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("err = %v, want ErrMalformedResponse", err)
	}
}
