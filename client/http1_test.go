package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
)

// scriptServer is a raw TCP server on loopback: for every request it reads
// (parsed by net/http, body drained), it calls answer, which writes whatever
// bytes the test wants; answer returns false to close the connection. n
// counts requests on the connection from 0.
func scriptServer(t *testing.T, answer func(w *bufio.Writer, n int) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				bw := bufio.NewWriter(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					more := answer(bw, n)
					bw.Flush()
					if !more {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String()
}

func prepared(t *testing.T, base string, opts client.Options) *client.PreparedInfer {
	t.Helper()
	c, err := client.NewREST(base, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.PrepareInfer("m", "", []byte(`{"inputs":[]}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestPreparedInferFraming sends over the HTTP/1.1 fast path to servers
// that answer each request with fixed bytes, well-formed or not.
func TestPreparedInferFraming(t *testing.T) {
	const okJSON = `{"model_name":"m","outputs":[]}`
	tests := []struct {
		name    string
		answer  string
		keep    int64
		wantErr string // "" for success
		is      error  // the error wraps it
		bodyLen int64
		status  int  // for an HTTP status error
		close   bool // the server closes the connection after answering
	}{
		{name: "content-length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 31\r\n\r\n" + okJSON, bodyLen: 31},
		{name: "content-length kept", answer: "HTTP/1.1 200 OK\r\nContent-Length: 31\r\n\r\n" + okJSON, keep: 1 << 20, bodyLen: 31},
		{name: "chunked", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\n{\"mod\r\n1A\r\nel_name\":\"m\",\"outputs\":[]}\r\n0\r\nTrailer: v\r\n\r\n", keep: 1 << 20, bodyLen: 31},
		{name: "interim answer", answer: "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", bodyLen: 2},
		{name: "LF only", answer: "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", bodyLen: 2},
		{name: "binary header length", answer: "HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 2\r\nContent-Length: 6\r\n\r\n{}abcd", bodyLen: 6},
		{name: "until close", answer: "HTTP/1.0 200 OK\r\n\r\n{}", bodyLen: 2, close: true},
		{name: "204", answer: "HTTP/1.1 204 No Content\r\n\r\n"},

		{name: "garbage", answer: "\x00\x01garbage\r\n\r\n", wantErr: `malformed response: status line "\x00\x01garbage"`, is: client.ErrMalformedResponse},
		{name: "HTTP/2 preface", answer: "HTTP/2 200\r\n\r\n", wantErr: "malformed response: status line", is: client.ErrMalformedResponse},
		{name: "bad header", answer: "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", wantErr: "header line", is: client.ErrMalformedResponse},
		{name: "bad content-length", answer: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: `Content-Length "-1"`, is: client.ErrMalformedResponse},
		{name: "two content-lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", wantErr: "Content-Length given twice", is: client.ErrMalformedResponse},
		{name: "short body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{}", wantErr: "body ended after 2 of 10 bytes", is: client.ErrMalformedResponse, close: true},
		{name: "bytes after the body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n{}", wantErr: "1 bytes after the end of the 1-byte body", is: client.ErrMalformedResponse},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantErr: `chunk size line "zz"`, is: client.ErrMalformedResponse},
		{name: "chunk without CRLF", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}xx0\r\n\r\n", wantErr: "chunk of 2 bytes not followed by CRLF", is: client.ErrMalformedResponse},
		{name: "unsupported encoding", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", wantErr: `unsupported Transfer-Encoding "gzip"`, is: client.ErrMalformedResponse},
		{name: "header length beyond body", answer: "HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 7\r\nContent-Length: 6\r\n\r\n{}abcd", wantErr: `Inference-Header-Content-Length "7" is larger than the 6-byte body`, is: client.ErrMalformedResponse},
		{name: "header length not a number", answer: "HTTP/1.1 200 OK\r\nInference-Header-Content-Length: x\r\nContent-Length: 2\r\n\r\n{}", wantErr: `"x" is not an integer`, is: client.ErrMalformedResponse},
		{name: "header length twice", answer: "HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 1\r\nInference-Header-Content-Length: 1\r\nContent-Length: 2\r\n\r\n{}", wantErr: "given 2 times", is: client.ErrMalformedResponse},
		{name: "switching protocols", answer: "HTTP/1.1 101 Switching Protocols\r\n\r\n", wantErr: "unexpected interim answer 101", is: client.ErrMalformedResponse},
		{name: "headers too long", answer: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 1<<20) + "\r\n\r\n", wantErr: "status line and headers exceed", is: client.ErrMalformedResponse},
		{name: "content-length too large", answer: "HTTP/1.1 200 OK\r\nContent-Length: 524288000\r\n\r\n[1,", wantErr: "Content-Length 524288000 exceeds 67108864 bytes", is: client.ErrResponseTooLarge},
		{name: "kept body over the keep limit", answer: "HTTP/1.1 200 OK\r\nContent-Length: 31\r\n\r\n" + okJSON, keep: 10, wantErr: "Content-Length 31 exceeds 10 bytes", is: client.ErrResponseTooLarge},

		{name: "server error", answer: "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 16\r\n\r\n{\"error\":\"boom\"}", wantErr: "Infer: HTTP 500: boom", status: 500},
		{name: "redirect", answer: "HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/models/m/infer\r\nContent-Length: 0\r\n\r\n", wantErr: "HTTP 307", status: 307},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := scriptServer(t, func(w *bufio.Writer, _ int) bool {
				w.WriteString(tc.answer)
				return !tc.close
			})
			p := prepared(t, base, client.Options{Timeout: 5 * time.Second})
			// Twice: the second request reuses the connection when the
			// first answer allowed it.
			for range 2 {
				a, err := p.Send(ctxT(t), tc.keep)
				if tc.wantErr == "" {
					if err != nil {
						t.Fatalf("Send: %v", err)
					}
					if a.BodyLen != tc.bodyLen || (tc.keep > 0) != (a.Body != nil && int64(len(a.Body)) == tc.bodyLen) {
						t.Fatalf("answer %+v, want a %d-byte body (kept: %v)", a, tc.bodyLen, tc.keep > 0)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Send error %v, want one containing %q", err, tc.wantErr)
				}
				var ce *client.Error
				if !errors.As(err, &ce) || ce.HTTPStatus != tc.status {
					t.Fatalf("error %#v, want a *client.Error with HTTP status %d", err, tc.status)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("error %v does not wrap %v", err, tc.is)
				}
			}
		})
	}
}

// TestPreparedInferKeepAlive checks connection reuse: one connection for
// many requests, a new one after Connection: close, and a transparent
// retry when the server closed an idle keep-alive connection.
func TestPreparedInferKeepAlive(t *testing.T) {
	var conns atomic.Int32
	base := scriptServer(t, func(w *bufio.Writer, n int) bool {
		if n == 0 {
			conns.Add(1)
		}
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		return n < 4 // closes after the fifth request without saying so
	})
	p := prepared(t, base, client.Options{Connections: 1})
	for i := range 12 {
		if _, err := p.Send(ctxT(t), 0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i == 4 {
			time.Sleep(50 * time.Millisecond) // let the close arrive
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 12 requests, 5 per connection: want 3", n)
	}

	conns.Store(0)
	closing := scriptServer(t, func(w *bufio.Writer, n int) bool {
		conns.Add(1)
		w.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
		return true
	})
	p = prepared(t, closing, client.Options{Connections: 1})
	for i := range 3 {
		if _, err := p.Send(ctxT(t), 0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 answers with Connection: close, want 3", n)
	}
}

// TestPreparedInferBounded checks that no server can hold a call past its
// timeout or its context: silence, a slow drip, and cancellation.
func TestPreparedInferBounded(t *testing.T) {
	stop := make(chan struct{})
	hang := scriptServer(t, func(w *bufio.Writer, n int) bool {
		<-stop // never answers
		return false
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's cleanup
	drip := scriptServer(t, func(w *bufio.Writer, n int) bool {
		for _, c := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") {
			w.WriteByte(c)
			if w.Flush() != nil {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
		return true
	})
	for name, base := range map[string]string{"hang": hang, "drip": drip} {
		p := prepared(t, base, client.Options{Timeout: 300 * time.Millisecond})
		start := time.Now()
		_, err := p.Send(ctxT(t), 0)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no complete answer within 300ms") {
			t.Errorf("%s: error %v, want a timeout", name, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: took %v with a 300ms timeout", name, d)
		}
	}

	p := prepared(t, hang, client.Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Send(ctx, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancelled call took %v", d)
	}
}

// TestPreparedInferTLS checks the net/http path of https targets with the
// same checks.
func TestPreparedInferTLS(t *testing.T) {
	var hl atomic.Value
	hl.Store("2")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v2/models/m/infer" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"error":"wrong request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Inference-Header-Content-Length", hl.Load().(string))
		w.Write([]byte("{}ab"))
	}))
	defer srv.Close()
	c, err := client.NewREST(srv.URL, false, client.Options{TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.PrepareInfer("m", "", []byte(`{"inputs":[]}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Send(ctxT(t), 1<<20)
	if err != nil || a.HeaderLen != 2 || string(a.Body) != "{}ab" {
		t.Fatalf("Send = %+v, %v", a, err)
	}
	hl.Store("9")
	if _, err := p.Send(ctxT(t), 0); !errors.Is(err, client.ErrMalformedResponse) {
		t.Fatalf("header length beyond the body: %v, want ErrMalformedResponse", err)
	}
}

// BenchmarkPreparedInfer is BenchmarkRESTPostInfer over the HTTP/1.1 fast
// path: the same server, body and header length. Allocations per operation
// include the server's (net/http); the client's own are zero.
func BenchmarkPreparedInfer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"model_name":"m","outputs":[]}`))
	}))
	defer srv.Close()
	c, err := client.NewREST(srv.URL, true, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, err := c.PrepareInfer("m", "", []byte(strings.Repeat("x", 1024)), 100)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Send(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
}
