package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
)

// loopDriver sends perSlot requests of p on each slot and records every
// outcome; Next and Done run on the loop's goroutine, and the records are
// read only after Loop returns.
type loopDriver struct {
	p       *client.PreparedInfer
	keep    int64
	left    []int
	nexts   []int
	answers []client.InferAnswer
	errs    []error
	done    []int
}

func newLoopDriver(p *client.PreparedInfer, slots, perSlot int, keep int64) *loopDriver {
	d := &loopDriver{p: p, keep: keep, left: make([]int, slots), nexts: make([]int, slots), done: make([]int, slots)}
	for i := range d.left {
		d.left[i] = perSlot
	}
	return d
}

func (d *loopDriver) Next(slot int) (*client.PreparedInfer, int64, bool) {
	if d.left[slot] == 0 {
		return nil, 0, false
	}
	d.left[slot]--
	d.nexts[slot]++
	return d.p, d.keep, true
}

func (d *loopDriver) Done(slot int, a client.InferAnswer, err error) {
	d.done[slot]++
	if a.Body != nil {
		a.Body = append([]byte(nil), a.Body...) // the loop may reuse its buffer
	}
	d.answers = append(d.answers, a)
	d.errs = append(d.errs, err)
}

func skipNoLoop(t *testing.T) {
	t.Helper()
	if !client.EventLoop() {
		t.Skip("the event loop is switched off or unavailable")
	}
}

func loopClient(t *testing.T, url string, binary bool, opts client.Options) *client.REST {
	t.Helper()
	c, err := client.NewREST(url, binary, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func prepareLoop(t *testing.T, c *client.REST, headerLen int) *client.PreparedInfer {
	t.Helper()
	p, err := c.PrepareInfer("m", "", []byte(`{"inputs":[]}`), headerLen)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// countingServer is an httptest server that counts requests and the
// connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var reqs, conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		reqs.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &reqs, &conns
}

func TestLoopAnswers(t *testing.T) {
	skipNoLoop(t)
	const body = `{"model_name":"m","outputs":[]}`
	s, reqs, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)+4))
		w.Header().Set("Inference-Header-Content-Length", fmt.Sprint(len(body)))
		w.Write([]byte(body + "\x01\x02\x03\x04"))
	})
	const slots, perSlot = 8, 25
	c := loopClient(t, s.URL, true, client.Options{Connections: slots, Timeout: 5 * time.Second})
	p := prepareLoop(t, c, 13)
	for _, keep := range []int64{1 << 20, 0} {
		d := newLoopDriver(p, slots, perSlot, keep)
		if err := c.Loop(context.Background(), slots, d); err != nil {
			t.Fatalf("keep %d: Loop: %v", keep, err)
		}
		if len(d.answers) != slots*perSlot {
			t.Fatalf("keep %d: %d outcomes, want %d", keep, len(d.answers), slots*perSlot)
		}
		for i, a := range d.answers {
			if d.errs[i] != nil {
				t.Fatalf("keep %d: answer %d: %v", keep, i, d.errs[i])
			}
			if a.Status != 200 || a.BodyLen != int64(len(body)+4) || a.HeaderLen != len(body) {
				t.Fatalf("keep %d: answer %d: %+v", keep, i, a)
			}
			if keep > 0 && string(a.Body) != body+"\x01\x02\x03\x04" {
				t.Fatalf("keep %d: answer %d: body %q", keep, i, a.Body)
			}
			if keep == 0 && a.Body != nil {
				t.Fatalf("keep 0: answer %d: body kept: %q", i, a.Body)
			}
		}
	}
	if got := reqs.Load(); got != 2*slots*perSlot {
		t.Errorf("server saw %d requests, want %d", got, 2*slots*perSlot)
	}
	// Connections are kept alive, and pooled between the two loops.
	if got := conns.Load(); got > slots {
		t.Errorf("server accepted %d connections, want at most %d", got, slots)
	}
}

// rawServer answers every request read on a loopback connection with
// answer; with closeAfter it closes the connection after each answer.
func rawServer(t *testing.T, answer string, closeAfter bool) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			cn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer cn.Close()
				cn.SetDeadline(time.Now().Add(10 * time.Second)) // bounded whatever happens
				br := bufio.NewReader(cn)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, r.Body)
					if answer == "" { // never answer
						continue
					}
					if _, err := io.WriteString(cn, answer); err != nil || closeAfter {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String(), &conns
}

// loopVsSend runs perSlot requests on slots slots of a loop, and the same
// through PreparedInfer.Send, and returns the loop's outcomes and Send's.
func loopVsSend(t *testing.T, url string, slots, perSlot int, keep int64, opts client.Options) (*loopDriver, client.InferAnswer, error) {
	t.Helper()
	c := loopClient(t, url, false, opts)
	p := prepareLoop(t, c, -1)
	d := newLoopDriver(p, slots, perSlot, keep)
	if err := c.Loop(context.Background(), slots, d); err != nil {
		t.Fatalf("Loop: %v", err)
	}
	a, err := p.Send(context.Background(), keep)
	if a.Body != nil {
		a.Body = append([]byte(nil), a.Body...)
	}
	return d, a, err
}

func sameOutcome(a, b client.InferAnswer, ea, eb error) bool {
	if (ea == nil) != (eb == nil) {
		return false
	}
	if ea != nil {
		return ea.Error() == eb.Error()
	}
	return a.Status == b.Status && a.BodyLen == b.BodyLen && a.HeaderLen == b.HeaderLen && string(a.Body) == string(b.Body)
}

func TestLoopFallbackAnswers(t *testing.T) {
	skipNoLoop(t)
	longHead := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 20<<10) + "\r\nContent-Length: 2\r\n\r\n{}"
	cases := []struct {
		name, answer string
		close        bool
	}{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n", false},
		{"until-close", "HTTP/1.0 200 OK\r\n\r\n{\"a\":1}", true},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}", false},
		{"long-head", longHead, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := rawServer(t, tc.answer, tc.close)
			opts := client.Options{Connections: 4, Timeout: 5 * time.Second, MaxResponseBytes: 64 << 10}
			for _, keep := range []int64{1 << 20, 0} {
				d, want, werr := loopVsSend(t, url, 4, 5, keep, opts)
				if len(d.answers) != 20 {
					t.Fatalf("keep %d: %d outcomes, want 20", keep, len(d.answers))
				}
				for i, a := range d.answers {
					if !sameOutcome(a, want, d.errs[i], werr) {
						t.Fatalf("keep %d: answer %d: loop %+v, %v; Send %+v, %v", keep, i, a, d.errs[i], want, werr)
					}
				}
			}
		})
	}
}

func TestLoopErrorAnswer(t *testing.T) {
	skipNoLoop(t)
	s, reqs, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"no such input"}`)
	})
	c := loopClient(t, s.URL, false, client.Options{Connections: 2, Timeout: 5 * time.Second})
	d := newLoopDriver(prepareLoop(t, c, -1), 2, 10, 0)
	if err := c.Loop(context.Background(), 2, d); err != nil {
		t.Fatal(err)
	}
	for i, err := range d.errs {
		var e *client.Error
		if !errors.As(err, &e) || e.HTTPStatus != 400 || e.Message != "no such input" {
			t.Fatalf("answer %d: %v (%#v), want *Error 400 %q", i, err, e, "no such input")
		}
	}
	if reqs.Load() != 20 || conns.Load() > 2 {
		t.Errorf("server saw %d requests on %d connections, want 20 on at most 2", reqs.Load(), conns.Load())
	}
}

// TestLoopStaleKeepAlive: a server that closes each connection after its
// answer without saying so: the next request on it fails before a byte of
// answer and is sent again once on a new connection.
func TestLoopStaleKeepAlive(t *testing.T) {
	skipNoLoop(t)
	url, conns := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true)
	c := loopClient(t, url, false, client.Options{Connections: 3, Timeout: 5 * time.Second})
	p := prepareLoop(t, c, -1)
	for range 2 { // the second loop starts from the first's pooled, now closed, connections
		d := newLoopDriver(p, 3, 4, 0)
		if err := c.Loop(context.Background(), 3, d); err != nil {
			t.Fatal(err)
		}
		for i, err := range d.errs {
			if err != nil || d.answers[i].Status != 200 {
				t.Fatalf("answer %d: %+v, %v", i, d.answers[i], err)
			}
		}
	}
	if got := conns.Load(); got != 24 {
		t.Errorf("server accepted %d connections, want 24 (one per request)", got)
	}
}

func TestLoopTimeout(t *testing.T) {
	skipNoLoop(t)
	url, _ := rawServer(t, "", false)
	c := loopClient(t, url, false, client.Options{Connections: 2, Timeout: 300 * time.Millisecond})
	d := newLoopDriver(prepareLoop(t, c, -1), 2, 1, 0)
	if err := c.Loop(context.Background(), 2, d); err != nil {
		t.Fatal(err)
	}
	for i, err := range d.errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("answer %d: %v, want a timeout wrapping context.DeadlineExceeded", i, err)
		}
	}
}

func TestLoopRefused(t *testing.T) {
	skipNoLoop(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	c := loopClient(t, "http://"+addr, false, client.Options{Connections: 2, Timeout: 5 * time.Second})
	d := newLoopDriver(prepareLoop(t, c, -1), 2, 2, 0)
	if err := c.Loop(context.Background(), 2, d); err != nil {
		t.Fatal(err)
	}
	if len(d.errs) != 4 {
		t.Fatalf("%d outcomes, want 4", len(d.errs))
	}
	for i, err := range d.errs {
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("answer %d: %v, want ECONNREFUSED", i, err)
		}
	}
}

func TestLoopGarbage(t *testing.T) {
	skipNoLoop(t)
	url, _ := rawServer(t, "SMTP ready\r\n\r\n", false)
	c := loopClient(t, url, false, client.Options{Connections: 2, Timeout: 5 * time.Second})
	d := newLoopDriver(prepareLoop(t, c, -1), 2, 2, 0)
	if err := c.Loop(context.Background(), 2, d); err != nil {
		t.Fatal(err)
	}
	for i, err := range d.errs {
		if !errors.Is(err, client.ErrMalformedResponse) {
			t.Fatalf("answer %d: %v, want ErrMalformedResponse", i, err)
		}
	}
}

// cancelDriver cancels ctx once a quarter of its requests are done.
type cancelDriver struct {
	*loopDriver
	cancel func()
	after  int
}

func (d *cancelDriver) Done(slot int, a client.InferAnswer, err error) {
	d.loopDriver.Done(slot, a, err)
	if len(d.answers) == d.after {
		d.cancel()
	}
}

func TestLoopCancel(t *testing.T) {
	skipNoLoop(t)
	// Half the answers are chunked so that some slots are on the blocking
	// path when ctx ends; a slow server keeps requests in flight.
	var n atomic.Int64
	s, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			w.(http.Flusher).Flush() // chunked
		}
		io.WriteString(w, "{}")
	})
	c := loopClient(t, s.URL, false, client.Options{Connections: 8, Timeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &cancelDriver{loopDriver: newLoopDriver(prepareLoop(t, c, -1), 8, 1000, 0), cancel: cancel, after: 200}
	if err := c.Loop(ctx, 8, d); err != nil {
		t.Fatal(err)
	}
	for slot := range d.nexts {
		if d.nexts[slot] != d.done[slot] {
			t.Errorf("slot %d: %d requests, %d outcomes", slot, d.nexts[slot], d.done[slot])
		}
	}
	if len(d.answers) >= 8000 {
		t.Errorf("all %d requests ran: the cancel did not stop the loop", len(d.answers))
	}
}

func TestLoopNoEventLoop(t *testing.T) {
	skipNoLoop(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := loopClient(t, srv.URL, false, client.Options{Connections: 2, Timeout: 5 * time.Second, TLS: tlsConfig(srv)})
	d := newLoopDriver(prepareLoop(t, c, -1), 2, 1, 0)
	if err := c.Loop(context.Background(), 2, d); !errors.Is(err, client.ErrNoEventLoop) {
		t.Fatalf("https: Loop = %v, want ErrNoEventLoop", err)
	}

	s, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	c = loopClient(t, s.URL, false, client.Options{Connections: 2, Timeout: 5 * time.Second})
	p := prepareLoop(t, c, -1)
	if err := c.Loop(context.Background(), 3, newLoopDriver(p, 3, 1, 0)); !errors.Is(err, client.ErrNoEventLoop) {
		t.Fatalf("3 slots on 2 connections: Loop = %v, want ErrNoEventLoop", err)
	}
	d = newLoopDriver(p, 2, 3, 0)
	if err := c.Loop(context.Background(), 2, d); err != nil {
		t.Fatalf("after ErrNoEventLoop: %v", err)
	}
	for i, err := range d.errs {
		if err != nil || d.answers[i].Status != 200 {
			t.Fatalf("answer %d: %+v, %v", i, d.answers[i], err)
		}
	}
}

// TestLoopAllocs: an unsampled answer (keep 0) costs no allocation in
// steady state. What a Loop allocates once — its epoll instance's state, the
// slots' table and answer readers, the wake-up pipe's buffers — is spread
// over its 2,000 requests, so the per-request figure stays far below 0.05.
func TestLoopAllocs(t *testing.T) {
	skipNoLoop(t)
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := loopClient(t, quietServer(t), false, client.Options{Connections: 4, Timeout: 5 * time.Second})
	p := prepareLoop(t, c, -1)
	const perSlot = 500
	d := &countDriver{p: p, left: make([]int, 4)}
	run := func() {
		for i := range d.left {
			d.left[i] = perSlot
		}
		if err := c.Loop(context.Background(), 4, d); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm-up: connections dialled and pooled
	perLoop := testing.AllocsPerRun(2, run)
	if d.errs != 0 || d.ok == 0 {
		t.Fatalf("%d ok, %d errors", d.ok, d.errs)
	}
	perReq := perLoop / (4 * perSlot)
	t.Logf("%.0f allocations a Loop of %d requests, %.4f a request", perLoop, 4*perSlot, perReq)
	if perReq >= 0.05 {
		t.Errorf("%.4f allocations a request (%.0f a Loop), want < 0.05", perReq, perLoop)
	}
}

// countDriver counts outcomes without keeping them, so it allocates nothing.
type countDriver struct {
	p        *client.PreparedInfer
	left     []int
	ok, errs int
}

func (d *countDriver) Next(slot int) (*client.PreparedInfer, int64, bool) {
	if d.left[slot] == 0 {
		return nil, 0, false
	}
	d.left[slot]--
	return d.p, 0, true
}

func (d *countDriver) Done(slot int, a client.InferAnswer, err error) {
	if err != nil || a.Status != 200 || a.Body != nil {
		d.errs++
		return
	}
	d.ok++
}

// quietServer answers without allocating, since AllocsPerRun counts the
// whole process: each request prepareLoop makes has exactly one '}' (its
// body's last byte), so every '}' read is one answer to write.
func quietServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"outputs\":[]}")
	wg.Go(func() {
		for {
			cn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer cn.Close()
				cn.SetDeadline(time.Now().Add(60 * time.Second)) // bounded whatever happens
				buf := make([]byte, 4096)
				for {
					n, err := cn.Read(buf)
					if err != nil {
						return
					}
					for _, b := range buf[:n] {
						if b == '}' {
							if _, err := cn.Write(answer); err != nil {
								return
							}
						}
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String()
}
