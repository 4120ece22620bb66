package client

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answerConn is a net.Conn whose peer answers with fixed bytes.
type answerConn struct {
	net.Conn
	r *bytes.Reader
}

func (c *answerConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *answerConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *answerConn) SetDeadline(time.Time) error      { return nil }
func (c *answerConn) Close() error                     { return nil }
func (c *answerConn) SetReadDeadline(time.Time) error  { return nil }
func (c *answerConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzHTTP1Answer reads arbitrary bytes as the answer to a PreparedInfer
// and compares the verdict with net/http's: whatever the fast path accepts,
// net/http must accept too, with the same status and body. (The fast path
// may refuse more: it checks the binary header length, and refuses bytes
// after the body.) It must never panic, hang or keep more than its limit.
func FuzzHTTP1Answer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\nT: v\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.0 200 OK\r\n\r\nuntil the end",
		"HTTP/1.1 500 Oops\r\nContent-Length: 16\r\n\r\n{\"error\":\"boom\"}",
		"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 2\r\nContent-Length: 4\r\n\r\n{}ab",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"garbage",
		// A header line longer than maxKeptLine: its tail is dropped.
		"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", maxKeptLine) + "\r\nContent-Length: 2\r\n\r\n{}",
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, keep bool) {
		const max = 1 << 16
		cn := &http1Conn{nc: &answerConn{r: bytes.NewReader(data)}, maxHeader: DefaultMaxHeaderBytes}
		cn.br = bufio.NewReaderSize(cn.nc, 64)
		err := cn.request([]byte("POST / HTTP/1.1\r\n\r\n"), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		a, errBody, _, _, err := cn.answer(keep, max)
		if int64(len(a.Body)) > max || len(errBody) > maxErrorBody {
			t.Fatalf("kept %d and %d bytes, limits %d and %d", len(a.Body), len(errBody), max, maxErrorBody)
		}
		if err != nil {
			return
		}
		// net/http's reading of the same bytes, skipping 1xx answers as
		// its Transport does.
		br := bufio.NewReader(bytes.NewReader(data))
		req, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
		var resp *http.Response
		for {
			resp, err = http.ReadResponse(br, req)
			if err != nil {
				t.Fatalf("fast path accepted %q (status %d), net/http refuses it: %v", data, a.Status, err)
			}
			if resp.StatusCode >= 200 || resp.StatusCode == 101 {
				break
			}
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if err != nil {
			t.Fatalf("fast path accepted %q, net/http fails reading the body: %v", data, err)
		}
		if resp.StatusCode != a.Status {
			t.Fatalf("%q: status %d, net/http %d", data, a.Status, resp.StatusCode)
		}
		got := a.Body
		if a.Status > 299 {
			got = errBody
		}
		if a.Status > 299 || keep {
			if !bytes.Equal(got, body) {
				t.Fatalf("%q: body %q, net/http %q", data, got, body)
			}
		}
		if a.Status <= 299 && a.BodyLen != int64(len(body)) {
			t.Fatalf("%q: body length %d, net/http %d", data, a.BodyLen, len(body))
		}
	})
}
