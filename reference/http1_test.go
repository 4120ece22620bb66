package reference

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Conversations with the REST listener over raw TCP, each held with a
// server whose fast path (http1.go) is on and with the same server with
// netHTTPOnly set. net/http is the oracle: a case passes when both answer
// alike, whatever net/http's answer is. On top of the comparison, the fast
// server is asked who holds a connection that stays open, so that each
// case also checks the routing the top comment of http1.go promises (the
// fast path keeps what it takes, hands the rest to net/http).
// The helpers carry an h1 prefix so as not to take short names from the
// package's other tests.

const h1InferPath = "/v2/models/add_sub/infer"

// h1AddSub is an add_sub request: INPUT0 = 1..16, INPUT1 = 10s.
var h1AddSub = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},` +
	`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10]}]}`

// h1AddSubOut is what add_sub answers h1AddSub: the sums, the differences.
var h1AddSubOut = map[string][]float64{
	"OUTPUT0": {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26},
	"OUTPUT1": {-9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6},
}

func h1Delay(ms int) string {
	return `{"parameters":{"delay_ms":` + strconv.Itoa(ms) + `},"inputs":[{"name":"INPUT0","shape":[2],"datatype":"FP32","data":[1.5,-2]}]}`
}

// h1Post is a raw POST with Host, Content-Type and a Content-Length that
// fits body; extra header lines (each ending in CRLF) come after them.
func h1Post(path, extra, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n" + extra + "\r\n" + body
}

// h1Start starts a fixture server on a loopback port, with the fast path
// off when netHTTPOnly (Config.NetHTTPOnly), and shuts it down when the
// test ends.
func h1Start(t *testing.T, cfg Config, netHTTPOnly bool) *Server {
	t.Helper()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NetHTTPOnly = netHTTPOnly // the switch of oipkit serve --http-fast-path=false
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if (s.http1 == nil) != netHTTPOnly {
		t.Fatalf("fast path running = %v with netHTTPOnly = %v", s.http1 != nil, netHTTPOnly)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// h1FastHolds reports whether the fast path's loop still serves the
// connection whose client end is local (false once it closed it or handed
// it to net/http).
func h1FastHolds(s *Server, local net.Addr) bool {
	s.http1.mu.Lock()
	defer s.http1.mu.Unlock()
	for hc := range s.http1.conns {
		if hc.remote == local.String() {
			return true
		}
	}
	return false
}

// h1Answer is what the comparison looks at in a response: not Date, nor
// the order of the header fields. close is a "Connection: close", which
// http.ReadResponse takes out of the header; connection keeps any other
// value (an HTTP/1.0 "keep-alive").
type h1Answer struct {
	proto, status, body                                            string
	contentType, ihcl, contentLength, connection, transferEncoding string
	length                                                         int64
	close                                                          bool
}

func (a h1Answer) String() string {
	return fmt.Sprintf("{%s %q Content-Type=%q Inference-Header-Content-Length=%q Content-Length=%q(%d) Connection=%q Transfer-Encoding=%q close=%v body=%.300q}",
		a.proto, a.status, a.contentType, a.ihcl, a.contentLength, a.length, a.connection, a.transferEncoding, a.close, a.body)
}

// h1Read reads one response and its body.
func h1Read(br *bufio.Reader) (h1Answer, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return h1Answer{}, err
	}
	body, err := io.ReadAll(resp.Body)
	h := resp.Header
	a := h1Answer{
		proto: resp.Proto, status: resp.Status, body: string(body),
		contentType: strings.Join(h.Values("Content-Type"), ", "), ihcl: strings.Join(h.Values("Inference-Header-Content-Length"), ", "),
		contentLength: strings.Join(h.Values("Content-Length"), ", "), connection: strings.Join(h.Values("Connection"), ", "),
		transferEncoding: strings.Join(resp.TransferEncoding, ", "), length: resp.ContentLength, close: resp.Close,
	}
	if err != nil {
		a.body += fmt.Sprintf("<body cut short: %v>", err)
	}
	return a, err
}

func h1TimedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// h1Step writes send, then reads read responses.
type h1Step struct {
	send string
	read int
}

// h1Outcome is what one conversation came to.
type h1Outcome struct {
	answers []h1Answer
	closed  bool   // the server ended the connection (EOF or reset), rather than leaving it open
	holder  string // of an open connection on the fast server: "fast path" or "net/http"
}

// h1Converse holds steps on a new connection to s. Each step's write runs
// beside its reads, so that a server answering before it has read a large
// body cannot block the test. An expected response gets 5 s; after the
// last step, answers are read until the server closes the connection or
// stays silent (300 ms, or 2 s after an answer that announced the close).
// It may run on a goroutine of its own: it reports with t.Errorf.
func h1Converse(t *testing.T, s *Server, steps []h1Step) (out h1Outcome) {
	c, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Errorf("dial: %v", err)
		return out
	}
	defer c.Close()
	br := bufio.NewReader(c)
	var wg sync.WaitGroup
	defer wg.Wait() // before the deferred Close: a writer that is still blocked times out
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	for _, st := range steps {
		wg.Wait()
		wg.Go(func() {
			// A write error is not compared: whether a server that has
			// answered and closed resets the rest of a large write is a
			// race between the kernel's buffers.
			if _, err := io.WriteString(c, st.send); err != nil {
				t.Logf("write: %v", err)
			}
		})
		for range st.read {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			a, err := h1Read(br)
			if err != nil {
				if a.status != "" {
					out.answers = append(out.answers, a)
				}
				if h1TimedOut(err) {
					t.Logf("%s: no answer within 5 s", s.HTTPAddr())
					return out
				}
				out.closed = true
				return out
			}
			out.answers = append(out.answers, a)
		}
	}
	for {
		quiet := 300 * time.Millisecond
		if n := len(out.answers); n > 0 && out.answers[n-1].close {
			quiet = 2 * time.Second
		}
		c.SetReadDeadline(time.Now().Add(quiet))
		a, err := h1Read(br)
		if a.status != "" {
			out.answers = append(out.answers, a)
		}
		if err != nil {
			out.closed = !h1TimedOut(err)
			break
		}
	}
	if !out.closed && s.http1 != nil {
		// The quiet wait above is far longer than a hand-off takes to
		// drop the connection from the fast path's set.
		out.holder = "net/http"
		if h1FastHolds(s, c.LocalAddr()) {
			out.holder = "fast path"
		}
	}
	return out
}

// h1Compare fails t when the fast server's outcome differs from net/http's.
func h1Compare(t *testing.T, fast, plain h1Outcome) {
	t.Helper()
	if len(fast.answers) != len(plain.answers) {
		t.Errorf("fast path: %d answers %v; net/http: %d answers %v", len(fast.answers), fast.answers, len(plain.answers), plain.answers)
	} else {
		for i := range plain.answers {
			if fast.answers[i] != plain.answers[i] {
				t.Errorf("answer %d:\nfast path %v\nnet/http  %v", i+1, fast.answers[i], plain.answers[i])
			}
		}
	}
	if fast.closed != plain.closed {
		t.Errorf("server closed the connection: fast path %v, net/http %v", fast.closed, plain.closed)
	}
}

// h1Pair starts a fast-path server and a net/http-only one alike.
func h1Pair(t *testing.T, cfg Config) (fast, plain *Server) {
	return h1Start(t, cfg, false), h1Start(t, cfg, true)
}

// TestHTTP1ConversationsMatchNetHTTP holds each conversation of the table
// with both servers and compares the answers, whether the connection was
// closed, and (fast server only) who holds it if it stays open.
func TestHTTP1ConversationsMatchNetHTTP(t *testing.T) {
	const limit = 1 << 16
	small := Config{MaxBodyBytes: limit}
	large := Config{MaxBodyBytes: 1 << 20} // room for a body the handler leaves unread past net/http's 256 KiB
	fastSmall, plainSmall := h1Pair(t, small)
	fastLarge, plainLarge := h1Pair(t, large)

	binHeader := `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},` +
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],"parameters":{"binary_data_output":true}}`
	binBody := binHeader + strings.Repeat("\x01\x00\x00\x00", 16) + strings.Repeat("\x0a\x00\x00\x00", 16)
	ihcl := "Inference-Header-Content-Length: " + strconv.Itoa(len(binHeader)) + "\r\n"
	infer := h1Post(h1InferPath, "", h1AddSub)
	ready := "GET /v2/health/ready HTTP/1.1\r\nHost: test\r\n\r\n"
	headerEnd := strings.Index(infer, "\r\n\r\n") + 4
	fields := func(n int) string { // n header lines besides Host, Content-Type and Content-Length
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "X-F%d: v\r\n", i)
		}
		return b.String()
	}
	// Bodies of exactly the limit and one byte over it: add_sub's JSON
	// after leading blanks.
	atLimit := strings.Repeat(" ", limit-len(h1AddSub)) + h1AddSub
	one := func(s string) []h1Step { return []h1Step{{s, 1}} }
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(h1AddSub), h1AddSub)

	cases := []struct {
		name  string
		large bool     // on the servers with the 1 MiB body limit
		via   string   // who holds the connection if it stays open: "fast path", "net/http"; "" = it is closed
		steps []h1Step // the read counts are what net/http is expected to answer
	}{
		{"JSON", false, "fast path", one(infer)},
		{"binary", false, "fast path", one(h1Post(h1InferPath, ihcl, binBody))},
		{"versioned", false, "fast path", one(h1Post("/v2/models/add_sub/versions/1/infer", "", h1AddSub))},
		{"unknown model, body never read, then an infer", false, "fast path", []h1Step{{h1Post("/v2/models/nope/infer", "", h1AddSub) + infer, 2}}},
		{"unknown version", false, "fast path", one(h1Post("/v2/models/add_sub/versions/9/infer", "", h1AddSub))},
		{"invalid JSON", false, "fast path", one(h1Post(h1InferPath, "", `{"inputs":[`))},
		{"wrong datatype", false, "fast path", one(h1Post(h1InferPath, "", strings.ReplaceAll(h1AddSub, "INT32", "FP32")))},
		{"Inference-Header-Content-Length past the body", false, "fast path", one(h1Post(h1InferPath, "Inference-Header-Content-Length: 9999\r\n", h1AddSub))},
		{"POST HTTP/1.1 (no target)", false, "", one("POST HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")},
		{"start of a TLS handshake", false, "net/http", []h1Step{{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 0}}},
		{"two pipelined in one write", false, "fast path", []h1Step{{infer + infer, 2}}},
		{"three keep-alive, each written after the answer before", false, "fast path", []h1Step{{infer, 1}, {infer, 1}, {infer, 1}}},
		{"Connection: close", false, "", one(h1Post(h1InferPath, "Connection: close\r\n", h1AddSub))},
		{"Connection: close, then an infer in the same write", false, "", []h1Step{{h1Post(h1InferPath, "Connection: close\r\n", h1AddSub) + infer, 1}}},
		{"Connection: keep-alive", false, "fast path", one(h1Post(h1InferPath, "Connection: keep-alive\r\n", h1AddSub))},
		{"infer, then a GET, then an infer", false, "net/http", []h1Step{{infer, 1}, {ready, 1}, {infer, 1}}},
		{"infer and GET in one write", false, "net/http", []h1Step{{infer + ready, 2}}},
		{"GET, then an infer", false, "net/http", []h1Step{{"GET /v2/models/add_sub HTTP/1.1\r\nHost: test\r\n\r\n", 1}, {infer, 1}}},
		{"chunked", false, "net/http", one("POST " + h1InferPath + " HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)},
		{"chunked with a Content-Length too", false, "net/http", one("POST " + h1InferPath + " HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nContent-Length: " +
			strconv.Itoa(len(chunked)) + "\r\n\r\n" + chunked)},
		{"Expect: 100-continue (100, then the answer)", false, "net/http", []h1Step{{h1Post(h1InferPath, "Expect: 100-continue\r\n", h1AddSub), 2}}},
		{"HTTP/1.0", false, "", one(strings.Replace(infer, "HTTP/1.1", "HTTP/1.0", 1))},
		{"HTTP/1.0 keep-alive, then an infer", false, "net/http", []h1Step{{strings.Replace(h1Post(h1InferPath, "Connection: keep-alive\r\n", h1AddSub), "HTTP/1.1", "HTTP/1.0", 1), 1}, {infer, 1}}},
		{"query", false, "net/http", one(h1Post(h1InferPath+"?x=1", "", h1AddSub))},
		{"escaped path", false, "net/http", one(h1Post("/v2/models/add%5Fsub/infer", "", h1AddSub))},
		{"absolute-form target", false, "net/http", one(h1Post("http://test"+h1InferPath, "", h1AddSub))},
		{"double slash", false, "net/http", one(h1Post("/v2//models/add_sub/infer", "", h1AddSub))},
		{"lower-case method", false, "net/http", one(strings.Replace(infer, "POST", "post", 1))},
		{"no Host", false, "", one(strings.Replace(infer, "Host: test\r\n", "", 1))},
		{"two Hosts", false, "", one(h1Post(h1InferPath, "Host: other\r\n", h1AddSub))},
		{"two equal Content-Lengths", false, "net/http", one(h1Post(h1InferPath, "Content-Length: "+strconv.Itoa(len(h1AddSub))+"\r\n", h1AddSub))},
		{"two different Content-Lengths", false, "", one(h1Post(h1InferPath, "Content-Length: 3\r\n", h1AddSub))},
		{"Content-Length with leading zeros", false, "fast path", one(strings.Replace(infer, "Content-Length: ", "Content-Length: 000", 1))},
		{"Content-Length with a plus sign", false, "", one(strings.Replace(infer, "Content-Length: ", "Content-Length: +", 1))},
		{"Content-Length between blanks", false, "fast path", one(strings.Replace(infer, "Content-Length: "+strconv.Itoa(len(h1AddSub)), "Content-Length: \t "+strconv.Itoa(len(h1AddSub))+" \t", 1))},
		{"obs-fold continuation line", false, "net/http", one(h1Post(h1InferPath, "X-A: a\r\n b\r\n", h1AddSub))},
		{"bare LF line ends", false, "net/http", one(strings.ReplaceAll(infer[:headerEnd], "\r\n", "\n") + h1AddSub)},
		{"one bare LF among CRLFs", false, "net/http", one(h1Post(h1InferPath, "X-A: a\n", h1AddSub))},
		{"header block over 4 KiB", false, "net/http", one(h1Post(h1InferPath, "X-Long: "+strings.Repeat("a", 5000)+"\r\n", h1AddSub))},
		{"32 header fields", false, "fast path", one(h1Post(h1InferPath, fields(29), h1AddSub))},
		{"33 header fields", false, "net/http", one(h1Post(h1InferPath, fields(30), h1AddSub))},
		{"body at the limit", false, "fast path", one(h1Post(h1InferPath, "", atLimit))},
		{"body one byte over the limit (413), then an infer", false, "net/http", []h1Step{{h1Post(h1InferPath, "", " "+atLimit) + infer, 2}}},
		{"Content-Length 0", false, "fast path", one(h1Post(h1InferPath, "", ""))},
		{"mixed-case names", false, "fast path", one(strings.NewReplacer("Host:", "HOST:", "Content-Length:", "content-length:", "Content-Type:", "CONTENT-type:").Replace(infer))},
		{"control byte in a value", false, "", one(h1Post(h1InferPath, "X-A: a\x01b\r\n", h1AddSub))},
		{"Upgrade", false, "net/http", one(h1Post(h1InferPath, "Upgrade: websocket\r\nConnection: Upgrade\r\n", h1AddSub))},
		{"TE", false, "net/http", one(h1Post(h1InferPath, "TE: trailers\r\n", h1AddSub))},
		{"Trailer", false, "net/http", one(h1Post(h1InferPath, "Trailer: X-T\r\n", h1AddSub))},
		{"HTTP2-Settings", false, "net/http", one(h1Post(h1InferPath, "HTTP2-Settings: AAMAAABkAAQAAP__\r\n", h1AddSub))},
		{"unknown model, 300 KiB body never read (closes), then an infer", true, "", []h1Step{{h1Post("/v2/models/nope/infer", "", strings.Repeat(" ", 300<<10)+h1AddSub) + infer, 1}}},
		{"unknown model, 200 KiB body never read (discarded), then an infer", true, "fast path", []h1Step{{h1Post("/v2/models/nope/infer", "", strings.Repeat(" ", 200<<10)+h1AddSub) + infer, 2}}},
	}
	// Every conversation runs at once (each waits out a quiet period, and
	// t.Parallel would run only GOMAXPROCS of them together); the
	// subtests compare afterwards.
	fast, plain := make([]h1Outcome, len(cases)), make([]h1Outcome, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		fastSrv, plainSrv := fastSmall, plainSmall
		if c.large {
			fastSrv, plainSrv = fastLarge, plainLarge
		}
		wg.Go(func() { fast[i] = h1Converse(t, fastSrv, c.steps) })
		wg.Go(func() { plain[i] = h1Converse(t, plainSrv, c.steps) })
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, plain := fast[i], plain[i]
			h1Compare(t, fast, plain)
			// The case is what it claims: net/http answers as often as
			// the steps expect (a comparison of two empty lists proves
			// nothing), and the connection ends up where http1.go says.
			want := 0
			for _, st := range c.steps {
				want += st.read
			}
			if len(plain.answers) != want {
				t.Errorf("net/http gave %d answers, the case expects %d: %v", len(plain.answers), want, plain.answers)
			}
			if got := fast.holder; got != c.via {
				t.Errorf("connection held by %q at the end (\"\" = closed), want %q", got, c.via)
			}
		})
	}
}

// TestHTTP1TruncatedBody: a client that half-closes before it has sent the
// body its Content-Length announced (or the end of its header block) gets
// what net/http would give it, and the connection ends.
func TestHTTP1TruncatedBody(t *testing.T) {
	fast, plain := h1Pair(t, Config{MaxBodyBytes: 1 << 16})
	short := "POST " + h1InferPath + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(h1AddSub)+100) + "\r\n\r\n" + h1AddSub
	for _, c := range []struct{ name, send string }{
		{"body cut short", short},
		{"no body at all", short[:strings.Index(short, "\r\n\r\n")+4]},
		{"header cut short", short[:strings.Index(short, "\r\n\r\n")+2]},
		{"after a whole request", h1Post(h1InferPath, "", h1AddSub) + short},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got, want h1Outcome
			var wg sync.WaitGroup
			wg.Go(func() { got = h1HalfClose(t, fast, c.send) })
			wg.Go(func() { want = h1HalfClose(t, plain, c.send) })
			wg.Wait()
			h1Compare(t, got, want)
			if !got.closed {
				t.Errorf("fast path left the connection open after the client half-closed mid-request")
			}
			if n := len(got.answers); n > 0 && got.answers[n-1].status[:3] != "400" {
				t.Errorf("answer to the cut request: %v, want 400 or none", got.answers[n-1])
			}
		})
	}
}

// h1HalfClose writes send, half-closes, and reads answers until the server
// closes (5 s at most).
// It may run on a goroutine of its own: it reports with t.Errorf.
func h1HalfClose(t *testing.T, s *Server, send string) h1Outcome {
	c, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Errorf("dial: %v", err)
		return h1Outcome{}
	}
	defer c.Close()
	if _, err := io.WriteString(c, send); err != nil {
		t.Errorf("write: %v", err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Errorf("CloseWrite: %v", err)
	}
	return h1ReadToEnd(c)
}

// h1ReadToEnd reads answers on c until the server closes it (5 s at most).
func h1ReadToEnd(c net.Conn) (out h1Outcome) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	for {
		a, err := h1Read(br)
		if a.status != "" {
			out.answers = append(out.answers, a)
		}
		if err != nil {
			out.closed = !h1TimedOut(err)
			return out
		}
	}
}

// h1Metrics scrapes /metrics into series → value.
func h1Metrics(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s %v", resp.Status, err)
	}
	m := make(map[string]float64)
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// h1WaitMetric polls /metrics until series has value v (5 s at most).
func h1WaitMetric(t *testing.T, s *Server, series string, v float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, ok := h1Metrics(t, s)[series]
		if ok && got == v {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (present %v), want %v within 5 s", series, got, ok, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHTTP1ClientGoneCancels: a client that closes its connection while
// its request runs cancels the request's context, on the fast path (its
// watcher) as with net/http (its background read). The delay fixture's
// sleep honours the context (fixture.sleepPrecisely), so a 30 s request
// leaves the in-flight gauge within 5 s and is counted with status 499,
// which the handler records only for context.Canceled.
func TestHTTP1ClientGoneCancelsBothPaths(t *testing.T) {
	for _, netHTTPOnly := range []bool{false, true} {
		name := "fast path"
		if netHTTPOnly {
			name = "net/http"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := h1Start(t, Config{}, netHTTPOnly)
			c, err := net.Dial("tcp", s.HTTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, h1Post("/v2/models/delay/infer", "", h1Delay(30_000))); err != nil {
				t.Fatal(err)
			}
			h1WaitMetric(t, s, "oip_inflight_requests", 1)
			if !netHTTPOnly && !h1FastHolds(s, c.LocalAddr()) {
				t.Fatal("the delay request is not on the fast path")
			}
			c.Close()
			h1WaitMetric(t, s, "oip_inflight_requests", 0)
			h1WaitMetric(t, s, `oip_requests_total{model="delay",protocol="rest",code="499"}`, 1)
		})
	}
}

// h1Output is the part of an infer response the tests check.
type h1Output struct {
	ModelName string `json:"model_name"`
	Outputs   []struct {
		Name string    `json:"name"`
		Data []float64 `json:"data"`
	} `json:"outputs"`
}

func h1Outputs(t *testing.T, a h1Answer) (string, map[string][]float64) {
	t.Helper()
	var o h1Output
	if !strings.HasPrefix(a.status, "200") {
		t.Fatalf("answer %v, want 200", a)
	}
	if err := json.Unmarshal([]byte(a.body), &o); err != nil {
		t.Fatalf("answer %v: %v", a, err)
	}
	m := make(map[string][]float64)
	for _, out := range o.Outputs {
		m[out.Name] = out.Data
	}
	return o.ModelName, m
}

// TestHTTP1PipelinedBehindLongRequest: a request that arrives 50 ms into a
// 300 ms one comes while the connection's watcher (armed after 10 ms, the
// body read) blocks in a one-byte read: that byte is the next request's
// first, and must go back in front of the rest, both when the fast path
// serves the next request and when it hands the connection to net/http.
func TestHTTP1PipelinedBehindLongRequest(t *testing.T) {
	s := h1Start(t, Config{}, false)
	for _, c := range []struct {
		name, second, via string
		check             func(t *testing.T, a h1Answer)
	}{
		{"an infer", h1Post(h1InferPath, "", h1AddSub), "fast path", func(t *testing.T, a h1Answer) {
			model, out := h1Outputs(t, a)
			if model != "add_sub" || !slices.Equal(out["OUTPUT0"], h1AddSubOut["OUTPUT0"]) || !slices.Equal(out["OUTPUT1"], h1AddSubOut["OUTPUT1"]) {
				t.Errorf("second answer %v, want add_sub's sums and differences", a)
			}
		}},
		{"a GET, handed to net/http", "GET /v2/health/ready HTTP/1.1\r\nHost: test\r\n\r\n", "net/http", func(t *testing.T, a h1Answer) {
			if !strings.HasPrefix(a.status, "200") || a.body != `{"ready":true}` {
				t.Errorf("second answer %v, want 200 {\"ready\":true}", a)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.HTTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, h1Post("/v2/models/delay/infer", "", h1Delay(300))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if _, err := io.WriteString(conn, c.second); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			first, err := h1Read(br)
			if err != nil {
				t.Fatalf("first answer: %v", err)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Errorf("first answer after %v, before the 300 ms delay", d)
			}
			model, out := h1Outputs(t, first)
			if model != "delay" || !slices.Equal(out["OUTPUT0"], []float64{1.5, -2}) {
				t.Errorf("first answer %v, want delay's echo of [1.5,-2]", first)
			}
			second, err := h1Read(br)
			if err != nil {
				t.Fatalf("second answer: %v", err)
			}
			c.check(t, second)
			// The connection carries on with whoever took it.
			if _, err := io.WriteString(conn, h1Post(h1InferPath, "", h1AddSub)); err != nil {
				t.Fatal(err)
			}
			third, err := h1Read(br)
			if err != nil {
				t.Fatalf("third answer: %v", err)
			}
			if _, out := h1Outputs(t, third); !slices.Equal(out["OUTPUT0"], h1AddSubOut["OUTPUT0"]) {
				t.Errorf("third answer %v", third)
			}
			// A connection handed to net/http leaves the fast path's set
			// when its goroutine returns, which may come after net/http
			// answered on it: wait for that (a bounded poll, not a timing).
			held := h1FastHolds(s, conn.LocalAddr())
			for end := time.Now().Add(5 * time.Second); held && c.via == "net/http" && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
				held = h1FastHolds(s, conn.LocalAddr())
			}
			holder := "net/http"
			if held {
				holder = "fast path"
			}
			if holder != c.via {
				t.Errorf("connection held by %s, want %s", holder, c.via)
			}
		})
	}
}

// TestHTTP1ShutdownClosesIdleConnections: Shutdown returns nil promptly
// when the only connections are idle, and closes each of them: one the
// fast path serves, one it handed to net/http, one that has sent nothing
// yet.
func TestHTTP1ShutdownClosesIdleConnections(t *testing.T) {
	s := h1Start(t, Config{}, false)
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	ask := func(c net.Conn, br *bufio.Reader, req string) {
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if a, err := h1Read(br); err != nil || !strings.HasPrefix(a.status, "200") || a.close {
			t.Fatalf("answer %v, %v; want 200 on a kept connection", a, err)
		}
	}
	fastConn, fastBR := dial()
	ask(fastConn, fastBR, h1Post(h1InferPath, "", h1AddSub))
	handedConn, handedBR := dial()
	ask(handedConn, handedBR, "GET /v2/health/live HTTP/1.1\r\nHost: test\r\n\r\n")
	freshConn, freshBR := dial()
	// Wait for the accept loop to take the fresh connection: one still in
	// the listener's backlog would be reset, not closed, by Shutdown.
	deadline := time.Now().Add(5 * time.Second)
	for !h1FastHolds(s, freshConn.LocalAddr()) {
		if time.Now().After(deadline) {
			t.Fatal("the fresh connection was not accepted within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	if !h1FastHolds(s, fastConn.LocalAddr()) || h1FastHolds(s, handedConn.LocalAddr()) {
		t.Fatal("the infer connection should be on the fast path, the GET one with net/http")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v with only idle connections", d)
	}
	for _, c := range []struct {
		name string
		conn net.Conn
		br   *bufio.Reader
	}{{"fast path", fastConn, fastBR}, {"handed to net/http", handedConn, handedBR}, {"fresh", freshConn, freshBR}} {
		c.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if b, err := c.br.ReadByte(); err != io.EOF {
			t.Errorf("%s connection after Shutdown: read %q, %v; want EOF", c.name, b, err)
		}
	}
}

// TestHTTP1ShutdownDuringRequestMatchesNetHTTP: a request running when
// Shutdown begins is answered, and its answer announces that the
// connection closes, as net/http's does: for a small answer, which the
// fast path buffers until the handler returns, and for one over 2 KiB,
// whose length the handler declares and which the fast path writes as the
// handler writes it.
func TestHTTP1ShutdownDuringRequestMatchesNetHTTP(t *testing.T) {
	big := `{"parameters":{"delay_ms":300},"inputs":[{"name":"INPUT0","shape":[600],"datatype":"FP32","data":[` +
		strings.TrimSuffix(strings.Repeat("1.5,", 600), ",") + `]}]}`
	for _, c := range []struct{ name, body string }{{"small answer", h1Delay(300)}, {"answer over 2 KiB", big}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := func(netHTTPOnly bool) h1Outcome {
				s := h1Start(t, Config{}, netHTTPOnly)
				conn, err := net.Dial("tcp", s.HTTPAddr())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := io.WriteString(conn, h1Post("/v2/models/delay/infer", "", c.body)); err != nil {
					t.Fatal(err)
				}
				h1WaitMetric(t, s, "oip_inflight_requests", 1)
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					done <- s.Shutdown(ctx)
				}()
				out := h1ReadToEnd(conn)
				if err := <-done; err != nil {
					t.Errorf("Shutdown (netHTTPOnly %v): %v", netHTTPOnly, err)
				}
				return out
			}
			fast, plain := run(false), run(true)
			h1Compare(t, fast, plain)
			if len(plain.answers) != 1 || !strings.HasPrefix(plain.answers[0].status, "200") || !plain.closed {
				t.Errorf("net/http: %v, closed %v; the case expects one 200 and the close", plain.answers, plain.closed)
			}
		})
	}
}
