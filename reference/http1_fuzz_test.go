package reference

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
)

// readerConn is a net.Conn that reads from a byte slice and writes nowhere.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c readerConn) RemoteAddr() net.Addr       { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// FuzzHTTP1Header feeds arbitrary bytes to the fast path's header reader.
// It must never panic, and whatever it takes for itself net/http must parse
// too, to the same method, path, host, length and inference header: the
// fast path may hand a valid request to net/http, never serve one net/http
// would refuse or read differently.
func FuzzHTTP1Header(f *testing.F) {
	for _, seed := range []string{
		"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST /v2/models/m/versions/1/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Length: 0\r\nInference-Header-Content-Length: 7\r\nConnection: close\r\n\r\n",
		"POST HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
		"POST /v2/models/a/infer HTTP/1.1\r\nhost: a\r\ncontent-length: 01\r\nX: \t v \t\r\n\r\n",
		"POST /v2/models/a/infer HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n fold\r\n\r\n",
		"POST /v2/models/a/infer HTTP/1.1\nHost: a\n\n",
		"GET /v2 HTTP/1.1\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &http1Server{s: &Server{cfg: Config{MaxBodyBytes: 1 << 20}}}
		hc := newHTTP1Conn(h, readerConn{r: bytes.NewReader(data)})
		n, fast, err := hc.readHeader()
		if err != nil || !fast {
			return
		}
		if n > len(data) {
			t.Fatalf("header block of %d bytes in %d bytes of input", n, len(data))
		}
		got := hc.req
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("the fast path took a request net/http refuses (%v): %q", err, data)
		}
		if got.Method != want.Method || got.URL.Path != want.URL.Path || got.URL.RawQuery != want.URL.RawQuery ||
			got.Host != want.Host || got.ContentLength != want.ContentLength || got.Close != want.Close ||
			got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor {
			t.Fatalf("fast path read %s %q host %q length %d close %v; net/http %s %q host %q length %d close %v; input %q",
				got.Method, got.URL.Path, got.Host, got.ContentLength, got.Close,
				want.Method, want.URL.Path, want.Host, want.ContentLength, want.Close, data)
		}
		const ihcl = "Inference-Header-Content-Length"
		if !slices.Equal(got.Header[ihcl], want.Header[ihcl]) {
			t.Fatalf("%s: fast path %q, net/http %q; input %q", ihcl, got.Header[ihcl], want.Header[ihcl], data)
		}
		if len(want.TransferEncoding) > 0 {
			t.Fatalf("the fast path took a request with Transfer-Encoding %v: %q", want.TransferEncoding, data)
		}
	})
}
