package oiptarget

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/fixture"
)

// The load generator against misbehaving servers: every case must end as
// failed requests with a clear message — never a hang, a crash or memory
// growth. The servers answer readiness and metadata like an OIP server
// serving add_sub and misbehave only on inference.

// hostileServer serves add_sub's readiness and metadata, and infer for
// POST /v2/models/add_sub/infer.
func hostileServer(t *testing.T, infer http.HandlerFunc) *httptest.Server {
	t.Helper()
	md := fixture.NewAddSub().Metadata()
	mdJSON, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"hostile","version":"1","extensions":[]}`))
	})
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v2/health/live", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v2/models/add_sub/ready", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v2/models/add_sub", func(w http.ResponseWriter, r *http.Request) { w.Write(mdJSON) })
	mux.HandleFunc("POST /v2/models/add_sub/infer", infer)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// hijack takes the raw connection of an inference request whose body has
// been read.
func hijack(w http.ResponseWriter, r *http.Request) (net.Conn, *bufio.ReadWriter) {
	io.Copy(io.Discard, r.Body)
	c, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	return c, rw
}

// recording is a Target that keeps the class and first message of each
// failed request.
type recording struct {
	loadgen.Target
	mu     sync.Mutex
	counts map[string]int
	first  map[string]string
}

func (r *recording) Do(ctx context.Context, seq uint64) error {
	err := r.Target.Do(ctx, seq)
	if err != nil && ctx.Err() == nil {
		class := loadgen.ErrorClass(err)
		r.mu.Lock()
		r.counts[class]++
		if _, ok := r.first[class]; !ok {
			r.first[class] = err.Error()
		}
		r.mu.Unlock()
	}
	return err
}

// hostileRun runs a short closed loop against srv and returns the result,
// the failures by class and the first message of each class.
func hostileRun(t *testing.T, srv *httptest.Server, protocol client.Protocol, timeout time.Duration) (*loadgen.Result, map[string]int, map[string]string) {
	t.Helper()
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: srv.URL, Protocol: protocol, Model: "add_sub", Timeout: loadgen.Duration(timeout), ReadyTimeout: loadgen.Duration(5 * time.Second)},
		Load:   loadgen.LoadConfig{Concurrency: 4, Duration: loadgen.Duration(time.Second), Interval: loadgen.Duration(250 * time.Millisecond)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	rec := &recording{Target: tg, counts: map[string]int{}, first: map[string]string{}}
	start := time.Now()
	res, err := loadgen.Run(ctx, rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The run ends at its duration plus at most one request timeout.
	if d := time.Since(start); d > time.Second+timeout+3*time.Second {
		t.Errorf("the run took %v: duration 1s, timeout %v", d, timeout)
	}
	return res, rec.counts, rec.first
}

func TestHostileServers(t *testing.T) {
	const okBody = `{"model_name":"add_sub","outputs":[]}`
	tests := []struct {
		name    string
		infer   http.HandlerFunc
		timeout time.Duration
		class   string // the class of every failure
		message string // in the first message of that class
		sampled string // the class of sampled answers' failures, when not class
		someOK  bool   // some requests succeed (the server dies mid-run)
	}{{
		name: "hangs forever",
		infer: func(w http.ResponseWriter, r *http.Request) {
			c, _ := hijack(w, r)
			io.Copy(io.Discard, c) // until the client gives up
			c.Close()
		},
		timeout: 300 * time.Millisecond, class: "timeout", message: "no complete answer within 300ms",
	}, {
		name: "answers after 30s",
		infer: func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that net/http notices the client leaving
			select {
			case <-time.After(30 * time.Second):
				w.Write([]byte(okBody))
			case <-r.Context().Done():
			}
		},
		timeout: 300 * time.Millisecond, class: "timeout", message: "no complete answer within 300ms",
	}, {
		name: "drips one byte a second",
		infer: func(w http.ResponseWriter, r *http.Request) {
			c, rw := hijack(w, r)
			defer c.Close()
			for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 37\r\n\r\n" + okBody) {
				rw.WriteByte(b)
				if rw.Flush() != nil {
					return
				}
				time.Sleep(time.Second)
			}
		},
		timeout: 1500 * time.Millisecond, class: "timeout", message: "no complete answer within 1.5s",
	}, {
		name: "resets connections",
		infer: func(w http.ResponseWriter, r *http.Request) {
			c, _ := hijack(w, r)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		},
		timeout: time.Second, class: "transport", message: "connection reset by peer",
	}, {
		name: "redirects in a loop",
		infer: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		},
		timeout: time.Second, class: "http_307", message: "HTTP 307",
	}, {
		name: "answers garbage",
		infer: func(w http.ResponseWriter, r *http.Request) {
			c, rw := hijack(w, r)
			rw.WriteString("\x00\x01\x02 not HTTP at all\r\n\r\n")
			rw.Flush()
			c.Close()
		},
		timeout: time.Second, class: "transport", message: "malformed response: status line",
	}, {
		name: "binary header length beyond the body",
		infer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Inference-Header-Content-Length", "999")
			w.Write([]byte(okBody))
		},
		timeout: time.Second, class: "transport", message: `Inference-Header-Content-Length "999" is larger than the 37-byte body`,
	}, {
		name: "body shorter than Content-Length",
		infer: func(w http.ResponseWriter, r *http.Request) {
			c, rw := hijack(w, r)
			rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + okBody)
			rw.Flush()
			c.Close()
		},
		timeout: time.Second, class: "transport", message: "body ended after 37 of 100 bytes",
	}, {
		name: "sends a 500 MB data array",
		infer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(500<<20))
			w.Write([]byte(`{"model_name":"add_sub","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,262144000],"data":[`))
			chunk := []byte(strings.Repeat("1,", 32<<10))
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		// The sampled answers are refused earlier, as too large to check.
		timeout: time.Second, class: "transport", message: "Content-Length 524288000 exceeds 67108864 bytes", sampled: "validation",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := hostileServer(t, tc.infer)
			res, counts, first := hostileRun(t, srv, client.ProtocolHTTP, tc.timeout)
			failed := res.Counts.Errors + res.Counts.Timeouts
			if failed == 0 || res.Counts.OK != 0 {
				t.Fatalf("%d OK, %d failed (%v): want every request failed", res.Counts.OK, failed, counts)
			}
			for class := range counts {
				if counts[tc.class] == 0 || class != tc.class && class != tc.sampled {
					t.Errorf("failures %v, want all of class %s", counts, tc.class)
					break
				}
			}
			if msg := first[tc.class]; !strings.Contains(msg, tc.message) {
				t.Errorf("message %q, want it to contain %q", msg, tc.message)
			}
		})
	}
}

// TestHostileServerStopsListening: the server goes away mid-run; the
// requests after that fail at once (refused, or reset on a connection the
// server closed under them), and the run ends on time.
func TestHostileServerStopsListening(t *testing.T) {
	var n atomic.Int64
	var srv *httptest.Server
	srv = hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 200 {
			go func() {
				srv.Listener.Close()
				srv.CloseClientConnections()
			}()
		}
		w.Write([]byte(addSubAnswer))
	})
	res, counts, first := hostileRun(t, srv, client.ProtocolHTTP, time.Second)
	if res.Counts.OK < 100 || counts["refused"] == 0 {
		t.Fatalf("%d OK, failures %v: want successes, then refused requests (%v)", res.Counts.OK, counts, first)
	}
	if msg := first["refused"]; !strings.Contains(msg, "connection refused") {
		t.Errorf("refused: message %q, want a refused connection", msg)
	}
	if msg, ok := first["transport"]; ok && !strings.Contains(msg, "reset") && !strings.Contains(msg, "EOF") && !strings.Contains(msg, "broken pipe") {
		t.Errorf("transport: message %q, want a reset connection", msg)
	}
}

// addSubAnswer is an answer of add_sub to the load generator's request
// (shape [1,16]) that passes the sampled checks (see sample.go).
var addSubAnswer = `{"model_name":"add_sub","outputs":[` +
	`{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[0` + strings.Repeat(",0", 15) + `]},` +
	`{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":[0` + strings.Repeat(",0", 15) + `]}]}`

// helperEnv makes the test binary run TestHelperEndlessBodyRun as the
// load generator of TestHostileEndlessBodyMemory.
const helperEnv = "OIPKIT_TEST_ENDLESS_TARGET"

// TestHostileEndlessBodyMemory runs the generator in a subprocess against a
// server that answers every request with an endless chunked body (and, with
// --validate, one with an endless data array), at concurrency 16 for 3
// seconds, and checks its peak RSS (VmHWM) stays under 100 MB.
func TestHostileEndlessBodyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator in a subprocess for a few seconds")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory use")
	}
	chunk := []byte(strings.Repeat("1,", 32<<10))
	srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"model_name":"add_sub","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[`))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	for _, validate := range []bool{false, true} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEndlessBodyRun$", "-test.v")
		cmd.Env = append(os.Environ(), helperEnv+"="+srv.URL, "OIPKIT_TEST_VALIDATE="+strconv.FormatBool(validate))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		var hwm, failed int64
		var msg string
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				hwm, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
			if v, ok := strings.CutPrefix(line, "failed: "); ok {
				fmt.Sscanf(v, "%d", &failed)
			}
			if v, ok := strings.CutPrefix(line, "message: "); ok {
				msg = v
			}
		}
		t.Logf("validate=%v: peak RSS %d kB, %d failed requests: %s", validate, hwm, failed, msg)
		if hwm == 0 || hwm > 100<<10 {
			t.Errorf("validate=%v: peak RSS %d kB, want under 100 MB", validate, hwm)
		}
		if failed == 0 || !strings.Contains(msg, "larger than") && !strings.Contains(msg, "exceeds") {
			t.Errorf("validate=%v: %d failed requests, message %q: want failures for a body too large", validate, failed, msg)
		}
	}
}

func TestHelperEndlessBodyRun(t *testing.T) {
	url := os.Getenv(helperEnv)
	if url == "" {
		t.Skip("helper of TestHostileEndlessBodyMemory")
	}
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: url, Protocol: client.ProtocolHTTP, Model: "add_sub"},
		Inputs: loadgen.InputConfig{Validate: os.Getenv("OIPKIT_TEST_VALIDATE") == "true"},
		Load:   loadgen.LoadConfig{Concurrency: 16, Duration: loadgen.Duration(3 * time.Second)},
	}
	ctx := context.Background()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	rec := &recording{Target: tg, counts: map[string]int{}, first: map[string]string{}}
	res, err := loadgen.Run(ctx, rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Println(line)
		}
	}
	fmt.Printf("failed: %d\n", res.Counts.Errors+res.Counts.Timeouts)
	for _, m := range rec.first {
		fmt.Printf("message: %s\n", m)
	}
}
