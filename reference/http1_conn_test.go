package reference

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of the REST fast path (http1.go) over real connections. Most
// compare it with net/http answering the same bytes: the same server with
// netHTTPOnly set is the oracle, so the checks hold whatever net/http's
// answer to a case is.

func startHTTP1(t *testing.T, netHTTPOnly bool) *Server {
	t.Helper()
	s, err := New(Config{HTTPAddr: "127.0.0.1:0", MaxBodyBytes: 64 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.netHTTPOnly = netHTTPOnly
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if (s.http1 != nil) == netHTTPOnly {
		t.Fatalf("fast path on = %v with netHTTPOnly = %v", s.http1 != nil, netHTTPOnly)
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

// addSubBody adds 10 to 1..16.
var addSubBody = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},` +
	`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[` + strings.TrimSuffix(strings.Repeat("10,", 16), ",") + `]}]}`

// post is a raw infer request; extra header lines end in CRLF.
func post(path, extra, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n" + extra + "\r\n" + body
}

// answer is what the comparison looks at in a response.
type answer struct {
	status                  int
	body, contentType, ihcl string
	length                  int64
	close                   bool
}

// exchange writes each of writes to a new connection (pausing between them
// so that they arrive apart), then reads answers until the server closes
// or goes quiet; closed reports whether the server closed the connection.
func exchange(t *testing.T, addr string, writes ...string) (answers []answer, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, w := range writes {
		if _, err := io.WriteString(c, w); err != nil {
			t.Fatal(err)
		}
		if i < len(writes)-1 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for {
		c.SetReadDeadline(time.Now().Add(quiet))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			return answers, !timedOut
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading answer %d: %v", len(answers)+1, err)
		}
		answers = append(answers, answer{resp.StatusCode, string(b), resp.Header.Get("Content-Type"),
			resp.Header.Get("Inference-Header-Content-Length"), resp.ContentLength, resp.Close})
		if resp.Close {
			c.SetReadDeadline(time.Now().Add(time.Second))
			_, err := br.ReadByte()
			return answers, err == io.EOF
		}
	}
}

// quiet is how long a connection stays silent before exchange takes it
// that no more answers come (answers on loopback take milliseconds).
const quiet = 500 * time.Millisecond

func TestHTTP1MatchesNetHTTP(t *testing.T) {
	fast, plain := startHTTP1(t, false), startHTTP1(t, true)
	binHeader := `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},` +
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],"parameters":{"binary_data_output":true}}`
	binBody := binHeader + strings.Repeat("\x01\x00\x00\x00", 32)
	ihcl := "Inference-Header-Content-Length: " + strconv.Itoa(len(binHeader)) + "\r\n"
	infer := post("/v2/models/add_sub/infer", "", addSubBody)
	cases := []struct {
		name   string
		writes []string
	}{
		{"JSON", []string{infer}},
		{"binary", []string{post("/v2/models/add_sub/infer", ihcl, binBody)}},
		{"versioned", []string{post("/v2/models/add_sub/versions/1/infer", "", addSubBody)}},
		{"unknown model, body unread", []string{post("/v2/models/nope/infer", "", addSubBody) + infer}},
		{"unknown version", []string{post("/v2/models/add_sub/versions/9/infer", "", addSubBody)}},
		{"invalid JSON", []string{post("/v2/models/add_sub/infer", "", `{"inputs":[`)}},
		{"wrong datatype", []string{post("/v2/models/add_sub/infer", "", strings.ReplaceAll(addSubBody, "INT32", "FP32"))}},
		{"header length past the body", []string{post("/v2/models/add_sub/infer", "Inference-Header-Content-Length: 9999\r\n", addSubBody)}},
		{"two pipelined", []string{infer + infer}},
		{"three keep-alive", []string{infer, infer, infer}},
		{"Connection: close", []string{post("/v2/models/add_sub/infer", "Connection: close\r\n", addSubBody), infer}},
		{"then a GET", []string{infer, "GET /v2/health/ready HTTP/1.1\r\nHost: test\r\n\r\n", infer}},
		{"a GET first", []string{"GET /v2/models/add_sub HTTP/1.1\r\nHost: test\r\n\r\n", infer}},
		{"chunked", []string{"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(addSubBody), addSubBody)}},
		{"Expect: 100-continue", []string{post("/v2/models/add_sub/infer", "Expect: 100-continue\r\n", addSubBody)}},
		{"HTTP/1.0", []string{strings.Replace(infer, "HTTP/1.1", "HTTP/1.0", 1)}},
		{"query", []string{post("/v2/models/add_sub/infer?x=1", "", addSubBody)}},
		{"escaped path", []string{post("/v2/models/add%5Fsub/infer", "", addSubBody)}},
		{"no Host", []string{strings.Replace(infer, "Host: test\r\n", "", 1)}},
		{"two Hosts", []string{post("/v2/models/add_sub/infer", "Host: other\r\n", addSubBody)}},
		{"two equal Content-Lengths", []string{post("/v2/models/add_sub/infer", "Content-Length: "+strconv.Itoa(len(addSubBody))+"\r\n", addSubBody)}},
		{"two different Content-Lengths", []string{post("/v2/models/add_sub/infer", "Content-Length: 3\r\n", addSubBody)}},
		{"folded header", []string{post("/v2/models/add_sub/infer", "X-A: a\r\n b\r\n", addSubBody)}},
		{"bare LF", []string{strings.ReplaceAll(infer[:strings.Index(infer, "\r\n\r\n")+4], "\r\n", "\n") + addSubBody}},
		{"header block over 4 KiB", []string{post("/v2/models/add_sub/infer", "X-Long: "+strings.Repeat("a", 5000)+"\r\n", addSubBody)}},
		{"body over the limit", []string{post("/v2/models/add_sub/infer", "", strings.Repeat(" ", 70<<10)+addSubBody)}},
		{"Content-Length 0", []string{post("/v2/models/add_sub/infer", "", "")}},
		{"mixed-case names", []string{strings.NewReplacer("Host:", "HOST:", "Content-Length:", "content-length:").Replace(infer)}},
		{"control byte in a value", []string{post("/v2/models/add_sub/infer", "X-A: a\x01b\r\n", addSubBody)}},
		{"POST HTTP/1.1", []string{"POST HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n"}},
		{"TLS handshake", []string{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want, got []answer
			var wantClosed, gotClosed bool
			var wg sync.WaitGroup
			wg.Go(func() { want, wantClosed = exchange(t, plain.HTTPAddr(), c.writes...) })
			wg.Go(func() { got, gotClosed = exchange(t, fast.HTTPAddr(), c.writes...) })
			wg.Wait()
			if len(got) != len(want) {
				t.Fatalf("fast path: %d answers %+v; net/http: %d %+v", len(got), got, len(want), want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("answer %d: fast path %+v; net/http %+v", i+1, got[i], want[i])
				}
			}
			if gotClosed != wantClosed {
				t.Errorf("connection closed: fast path %v, net/http %v", gotClosed, wantClosed)
			}
		})
	}
}

func inflight(s *Server) int64 { return s.metrics.inflight.Load() }

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func delayBody(ms int) string {
	return `{"parameters":{"delay_ms":` + strconv.Itoa(ms) + `},"inputs":[{"name":"INPUT0","shape":[2],"datatype":"FP32","data":[1.5,-2]}]}`
}

// TestHTTP1ClientGoneCancels: a client that goes away ends its request, as
// with net/http, instead of leaving the model running for nobody.
func TestHTTP1ClientGoneCancels(t *testing.T) {
	s := startHTTP1(t, false)
	c, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, post("/v2/models/delay/infer", "", delayBody(30_000)))
	waitFor(t, "the request in flight", func() bool { return inflight(s) == 1 })
	c.Close()
	waitFor(t, "the request cancelled after the client closed", func() bool { return inflight(s) == 0 })
}

// TestHTTP1PipelinedDuringLongRequest: a request that arrives while the one
// before it runs long is the byte the connection's watcher reads; it must
// be answered, after the first, intact.
func TestHTTP1PipelinedDuringLongRequest(t *testing.T) {
	s := startHTTP1(t, false)
	got, closed := exchange(t, s.HTTPAddr(), post("/v2/models/delay/infer", "", delayBody(300)),
		post("/v2/models/add_sub/infer", "", addSubBody))
	if closed || len(got) != 2 {
		t.Fatalf("answers %+v, closed %v; want 2 on an open connection", got, closed)
	}
	if got[0].status != 200 || !strings.Contains(got[0].body, `"model_name":"delay"`) {
		t.Errorf("first answer: %+v", got[0])
	}
	if got[1].status != 200 || !strings.Contains(got[1].body, `"data":[11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26]`) {
		t.Errorf("second answer: %+v", got[1])
	}
}

// TestHTTP1ShutdownClosesIdle: Shutdown closes a keep-alive connection that
// waits for its next request, and finishes promptly.
func TestHTTP1ShutdownClosesIdle(t *testing.T) {
	s, err := New(Config{HTTPAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, post("/v2/models/add_sub/infer", "", addSubBody))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v with only an idle connection", d)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection after Shutdown: read %q, %v; want EOF", b, err)
	}
}
