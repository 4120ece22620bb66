package client_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// restServer starts a loopback HTTP server with handler h and returns a REST
// client for it.
func restServer(t *testing.T, h http.HandlerFunc, opts client.Options) (*client.REST, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.NewREST(srv.URL, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// asError asserts that err is a *client.Error.
func asError(t *testing.T, err error) *client.Error {
	t.Helper()
	if err == nil {
		t.Fatal("got nil error, want *client.Error")
	}
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *client.Error", err, err)
	}
	return e
}

func TestNewRESTValidatesBaseURL(t *testing.T) {
	good := map[string]string{
		"http://127.0.0.1:8000":         "http://127.0.0.1:8000",
		"http://127.0.0.1:8000/":        "http://127.0.0.1:8000",
		"https://example.com/prefix/":   "https://example.com/prefix",
		"http://[::1]:8000/a%20b":       "http://[::1]:8000/a%20b",
		"http://localhost:8000/kserve/": "http://localhost:8000/kserve",
	}
	for in, want := range good {
		c, err := client.NewREST(in, false, client.Options{})
		if err != nil {
			t.Errorf("NewREST(%q): %v", in, err)
			continue
		}
		if got := c.BaseURL(); got != want {
			t.Errorf("NewREST(%q).BaseURL() = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{
		"", "127.0.0.1:8000", "grpc://127.0.0.1:8001", "http://", "http:///v2",
		"http://127.0.0.1:8000/?x=1", "http://127.0.0.1:8000/#f", "http://u:p@127.0.0.1:8000",
		"ftp://127.0.0.1", "http://%zz",
	} {
		if _, err := client.NewREST(in, false, client.Options{}); err == nil {
			t.Errorf("NewREST(%q) succeeded, want an error", in)
		}
	}
}

func TestRESTHealthAndServerMetadata(t *testing.T) {
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s, want GET", r.Method, r.URL.Path)
		}
		switch r.URL.Path {
		case "/v2/health/live":
			w.WriteHeader(http.StatusOK)
		case "/v2/health/ready":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"models loading"}`)
		case "/v2":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"name":"canned","version":"1.2.3","extensions":["binary_tensor_data"],"extra":1}`)
		default:
			http.NotFound(w, r)
		}
	}, client.Options{})
	ctx := context.Background()

	live, err := c.ServerLive(ctx)
	if err != nil || !live {
		t.Errorf("ServerLive = %v, %v; want true, nil", live, err)
	}

	ready, err := c.ServerReady(ctx)
	if ready {
		t.Error("ServerReady = true on a 503")
	}
	e := asError(t, err)
	if e.Op != "ServerReady" || e.HTTPStatus != 503 || e.Message != "models loading" || e.GRPCCode != 0 {
		t.Errorf("ServerReady error = %+v", e)
	}

	m, err := c.ServerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "canned" || m.Version != "1.2.3" || len(m.Extensions) != 1 || m.Extensions[0] != "binary_tensor_data" {
		t.Errorf("ServerMetadata = %+v", m)
	}
}

func TestRESTErrorField(t *testing.T) {
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Trace", "t1")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"boom"}`)
	}, client.Options{})
	_, err := c.ModelMetadata(context.Background(), "add_sub", "")
	e := asError(t, err)
	if e.Op != "ModelMetadata" || e.HTTPStatus != 400 || e.Message != "boom" || e.Err != nil {
		t.Errorf("error = %+v", e)
	}
	if string(e.Body) != `{"error":"boom"}` || e.Header.Get("X-Trace") != "t1" {
		t.Errorf("body %q, header %v not kept", e.Body, e.Header)
	}
	if got, want := e.Error(), "ModelMetadata: HTTP 400: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRESTErrorWithoutErrorField(t *testing.T) {
	const detail = `{"detail":[{"loc":["body","inputs"],"msg":"field required","type":"value_error.missing"}]}`
	long := strings.Repeat("é", 600) // 1200 bytes, multi-byte runes across the cut
	bodies := map[string]string{
		"/v2/models/fastapi": detail,
		"/v2/models/text":    "internal failure",
		"/v2/models/long":    long,
		"/v2/models/empty":   "",
		"/v2/models/nonstr":  `{"error":{"code":3}}`,
	}
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, bodies[r.URL.Path])
	}, client.Options{})
	for path, body := range bodies {
		model := strings.TrimPrefix(path, "/v2/models/")
		_, err := c.ModelMetadata(context.Background(), model, "")
		e := asError(t, err)
		if e.HTTPStatus != 422 {
			t.Errorf("%s: status %d", model, e.HTTPStatus)
		}
		if string(e.Body) != body {
			t.Errorf("%s: body %q not kept", model, e.Body)
		}
		if !strings.Contains(e.Message, `"error"`) {
			t.Errorf("%s: message %q does not say the error field is missing", model, e.Message)
		}
		if len(e.Message) > 600 {
			t.Errorf("%s: message is %d bytes, want it truncated", model, len(e.Message))
		}
		if !utf8.ValidString(e.Message) {
			t.Errorf("%s: message is not valid UTF-8", model)
		}
	}
	_, err := c.ModelMetadata(context.Background(), "fastapi", "")
	if msg := asError(t, err).Message; !strings.Contains(msg, "field required") || !strings.Contains(msg, `no "error" field`) {
		t.Errorf("FastAPI message = %q", msg)
	}
}

func TestRESTInvalidMetadataJSON(t *testing.T) {
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2":
			io.WriteString(w, `{"name": "x", "version": 3`)
		default:
			io.WriteString(w, `{"name": "m", "inputs": "not an array"}`)
		}
	}, client.Options{})
	_, err := c.ServerMetadata(context.Background())
	e := asError(t, err)
	if e.HTTPStatus != 200 || e.Err == nil || string(e.Body) != `{"name": "x", "version": 3` {
		t.Errorf("ServerMetadata error = %+v", e)
	}
	_, err = c.ModelMetadata(context.Background(), "m", "1")
	e = asError(t, err)
	if e.HTTPStatus != 200 || e.Err == nil || !strings.Contains(e.Message, "model metadata") {
		t.Errorf("ModelMetadata error = %+v", e)
	}
}

func TestRESTResponseSizeLimit(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 200)
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked": // no Content-Length: the limit applies while reading
			w.Write(big[:100])
			w.(http.Flusher).Flush()
			w.Write(big[100:])
		case "/exact":
			w.Write(big[:100])
		default:
			w.Write(big)
		}
	}, client.Options{MaxResponseBytes: 100})
	ctx := context.Background()
	for _, path := range []string{"/sized", "/chunked"} {
		_, err := c.Do(ctx, http.MethodGet, path, nil, nil)
		e := asError(t, err)
		if !errors.Is(err, client.ErrResponseTooLarge) || e.HTTPStatus != 0 || !strings.Contains(e.Message, "exceeds 100 bytes") {
			t.Errorf("%s: error = %+v", path, e)
		}
	}
	_, err := c.ServerMetadata(ctx)
	if !errors.Is(err, client.ErrResponseTooLarge) {
		t.Errorf("ServerMetadata error = %v, want ErrResponseTooLarge", err)
	}
	raw, err := c.Do(ctx, http.MethodGet, "/exact", nil, nil)
	if err != nil || len(raw.Body) != 100 {
		t.Errorf("a body of exactly the limit: %v", err)
	}
}

// blockUntilGone blocks a handler until the client goes away or the test ends.
func blockUntilGone() (http.HandlerFunc, func()) {
	release := make(chan struct{})
	var once sync.Once
	return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/health/live" {
				return // answers at once
			}
			if r.URL.Path == "/partial" {
				w.Header().Set("Content-Length", "100")
				io.WriteString(w, "{")
				w.(http.Flusher).Flush()
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, func() {
			once.Do(func() { close(release) })
		}
}

func TestRESTTimeout(t *testing.T) {
	h, release := blockUntilGone()
	c, srv := restServer(t, h, client.Options{Timeout: 200 * time.Millisecond})
	defer release()
	ctx := context.Background()

	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"ServerMetadata", func() error { _, err := c.ServerMetadata(ctx); return err }},
		{"Infer", func() error {
			_, err := c.PostInfer(ctx, "slow", "", []byte(`{"inputs":[]}`), -1)
			return err
		}},
		{"headers then stall", func() error { _, err := c.Do(ctx, http.MethodGet, "/partial", nil, nil); return err }},
	} {
		start := time.Now()
		err := call.do()
		// A generous bound: the handler would otherwise block until the test ends.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s returned after %v, want about the 200ms timeout", call.name, d)
		}
		e := asError(t, err)
		if !errors.Is(err, context.DeadlineExceeded) || e.HTTPStatus != 0 || e.Err == nil {
			t.Errorf("%s: error = %v (%+v), want a DeadlineExceeded transport error", call.name, err, e)
		}
	}

	// The context's own earlier deadline wins over Options.Timeout.
	c2, err := client.NewREST(srv.URL, false, client.Options{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c2.ServerReady(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ServerReady with a context deadline: %v", err)
	}
	// A cancelled context is reported as such.
	cctx, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := c2.ServerLive(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ServerLive with a cancelled context: %v", err)
	}
}

func TestRESTConnectionClosedMidBody(t *testing.T) {
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\": \"trunc")
		buf.Flush()
		conn.Close()
	}, client.Options{})
	_, err := c.ServerMetadata(context.Background())
	e := asError(t, err)
	if e.HTTPStatus != 0 || e.Err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error = %v (%+v), want a transport error wrapping io.ErrUnexpectedEOF", err, e)
	}
}

func TestRESTConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.NewREST("http://"+addr, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	live, err := c.ServerLive(context.Background())
	e := asError(t, err)
	if live || e.HTTPStatus != 0 || e.GRPCCode != 0 || e.Err == nil {
		t.Errorf("ServerLive = %v, %+v", live, e)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("error %v does not wrap the *net.OpError", err)
	}
}

func TestRESTHeadersAndHost(t *testing.T) {
	type seen struct {
		host, auth, ua, extra string
		multi                 []string
	}
	got := make(chan seen, 4)
	c, srv := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Get("Authorization"), r.Header.Get("User-Agent"), r.Header.Get("X-Extra"), r.Header.Values("X-Multi")}
	}, client.Options{
		Host:   "models.example.com",
		Header: http.Header{"Authorization": {"Bearer t0k"}, "X-Multi": {"a", "b"}},
	})
	if _, err := c.ServerLive(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.host != "models.example.com" || s.auth != "Bearer t0k" || !strings.HasPrefix(s.ua, "oipkit/") ||
		len(s.multi) != 2 || s.multi[0] != "a" || s.multi[1] != "b" {
		t.Errorf("server saw %+v", s)
	}

	// Do adds its own headers, replacing same-named ones, and may override Host.
	raw, err := c.Do(context.Background(), http.MethodGet, "/anything",
		http.Header{"authorization": {"Bearer other"}, "X-Extra": {"1"}, "Host": {"other.example.com"}}, nil)
	if err != nil || raw.Status != 200 {
		t.Fatalf("Do = %+v, %v", raw, err)
	}
	s = <-got
	if s.host != "other.example.com" || s.auth != "Bearer other" || s.extra != "1" {
		t.Errorf("server saw %+v", s)
	}

	// Without an override, Host is the target's.
	c2, err := client.NewREST(srv.URL, false, client.Options{Header: http.Header{"User-Agent": {"mine"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.ServerLive(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = <-got
	if s.host != strings.TrimPrefix(srv.URL, "http://") || s.ua != "mine" {
		t.Errorf("server saw %+v", s)
	}
}

func TestRESTPathEscapingAndPrefix(t *testing.T) {
	uris := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uris <- r.RequestURI
		io.WriteString(w, `{"name":"x","platform":"","inputs":[],"outputs":[]}`)
	}))
	defer srv.Close()
	c, err := client.NewREST(srv.URL+"/prefix/", false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.ModelReady(ctx, "my model/é", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelReady(ctx, "m", "v 1?"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelMetadata(ctx, "模型", "2"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"/prefix/v2/models/my%20model%2F%C3%A9/ready",
		"/prefix/v2/models/m/versions/v%201%3F/ready",
		"/prefix/v2/models/%E6%A8%A1%E5%9E%8B/versions/2",
	} {
		if got := <-uris; got != want {
			t.Errorf("request URI %q, want %q", got, want)
		}
	}
}

func TestRESTDoReturnsAnyStatus(t *testing.T) {
	type req struct {
		method, uri, ctype string
		body               []byte
	}
	reqs := make(chan req, 1)
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs <- req{r.Method, r.RequestURI, r.Header.Get("Content-Type"), b}
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.Header().Set("X-A", "1")
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "short and stout")
		}
	}, client.Options{})
	ctx := context.Background()
	raw, err := c.Do(ctx, http.MethodPost, "/v2/models//infer?x=1", http.Header{"Content-Type": {"text/plain"}}, []byte("{bad json"))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Status != 418 || string(raw.Body) != "short and stout" || raw.Header.Get("X-A") != "1" {
		t.Errorf("raw = %+v", raw)
	}
	r := <-reqs
	if r.method != "POST" || r.uri != "/v2/models//infer?x=1" || r.ctype != "text/plain" || string(r.body) != "{bad json" {
		t.Errorf("server saw %+v", r)
	}
	// Redirects are answers, not followed.
	raw, err = c.Do(ctx, http.MethodGet, "/redirect", nil, nil)
	if err != nil || raw.Status != http.StatusFound {
		t.Errorf("redirect: %+v, %v", raw, err)
	}
	<-reqs
	// HEAD answers have a Content-Length but no body.
	raw, err = c.Do(ctx, http.MethodHead, "/head", nil, nil)
	if err != nil || raw.Status != 418 || len(raw.Body) != 0 {
		t.Errorf("HEAD: %+v, %v", raw, err)
	}
	<-reqs
	// An empty non-nil body is sent as Content-Length: 0.
	if _, err := c.Do(ctx, http.MethodPost, "/empty", nil, []byte{}); err != nil {
		t.Fatal(err)
	}
	if r := <-reqs; len(r.body) != 0 || r.method != "POST" {
		t.Errorf("server saw %+v", r)
	}
}

func TestRESTPostInfer(t *testing.T) {
	type req struct {
		uri, ctype, ihcl string
		length           int64
		body             []byte
	}
	reqs := make(chan req, 64)
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs <- req{r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get(oip.HeaderInferenceHeaderContentLength), r.ContentLength, b}
		w.Write(b)
	}, client.Options{Connections: 4})
	ctx := context.Background()
	body := []byte(`{"inputs":[{"name":"IN","datatype":"UINT8","shape":[2],"parameters":{"binary_data_size":2}}]}` + "\x01\x02")
	headerLen := len(body) - 2

	raw, err := c.PostInfer(ctx, "id ent", "3", body, headerLen)
	if err != nil || raw.Status != 200 || !bytes.Equal(raw.Body, body) {
		t.Fatalf("PostInfer = %+v, %v", raw, err)
	}
	r := <-reqs
	if r.uri != "/v2/models/id%20ent/versions/3/infer" || r.ctype != "application/octet-stream" ||
		r.ihcl != strconv.Itoa(headerLen) || r.length != int64(len(body)) || !bytes.Equal(r.body, body) {
		t.Errorf("server saw %+v", r)
	}

	json := []byte(`{"inputs":[]}`)
	if _, err := c.PostInfer(ctx, "m", "", json, -1); err != nil {
		t.Fatal(err)
	}
	if r := <-reqs; r.uri != "/v2/models/m/infer" || r.ctype != "application/json" || r.ihcl != "" {
		t.Errorf("server saw %+v", r)
	}

	// One body shared by concurrent calls, alternating header lengths.
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			hl := headerLen
			if i%2 == 0 {
				hl = 10
			}
			raw, err := c.PostInfer(ctx, "m", "", body, hl)
			if err != nil || !bytes.Equal(raw.Body, body) {
				t.Errorf("concurrent PostInfer: %v", err)
			}
		})
	}
	wg.Wait()
	for range 32 {
		r := <-reqs
		if r.ihcl != "10" && r.ihcl != strconv.Itoa(headerLen) || !bytes.Equal(r.body, body) {
			t.Errorf("server saw %+v", r)
		}
	}
}

func TestRESTConnectionPool(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	active, maxActive := 0, 0
	gate := make(chan struct{})
	c, _ := restServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		active++
		maxActive = max(maxActive, active)
		mu.Unlock()
		<-gate
		mu.Lock()
		active--
		mu.Unlock()
	}, client.Options{Connections: 2, Timeout: time.Minute})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.ServerLive(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	// Let the calls queue on the pool, then release them.
	time.Sleep(100 * time.Millisecond)
	close(gate)
	wg.Wait()
	if len(conns) > 2 || maxActive > 2 {
		t.Errorf("%d connections, %d concurrent requests; want at most 2", len(conns), maxActive)
	}
}

// inferHandler answers every infer POST with a canned body and headers.
func inferHandler(status int, header map[string]string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func TestDecodeInferResponseHeaderLength(t *testing.T) {
	for _, v := range []string{"abc", "-1", "1000", "1e3", "99999999999999999999"} {
		raw := &client.RawResponse{
			Status: 200,
			Header: http.Header{oip.HeaderInferenceHeaderContentLength: {v}},
			Body:   []byte(`{"model_name":"m","outputs":[]}`),
		}
		_, err := client.DecodeInferResponse(raw)
		e := asError(t, err)
		if e.HTTPStatus != 200 || string(e.Body) != string(raw.Body) ||
			!strings.Contains(e.Message, oip.HeaderInferenceHeaderContentLength) {
			t.Errorf("header %q: error = %+v", v, e)
		}
	}
	_, err := client.DecodeInferResponse(&client.RawResponse{Status: 400, Body: []byte(`{"error":"bad input"}`)})
	if e := asError(t, err); e.HTTPStatus != 400 || e.Message != "bad input" || e.Op != "Infer" {
		t.Errorf("400: %+v", e)
	}
}

func TestRESTInfer(t *testing.T) {
	in, err := tensor.New("INPUT0", tensor.Int32, []int64{1, 4}, []int32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	req := &oip.InferRequest{Model: "add one", Version: "1", ID: "42", Inputs: []oip.InferInput{{Tensor: in}}}
	for _, binary := range []bool{false, true} {
		type seen struct {
			uri, ctype, ihcl string
			req              *oip.InferRequest
		}
		got := make(chan seen, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			hl := -1
			if v := r.Header.Get(oip.HeaderInferenceHeaderContentLength); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Error(err)
				}
				hl = n
			}
			dreq, err := oip.DecodeRESTRequest(b, hl, oip.Limits{})
			if err != nil {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":"`+err.Error()+`"}`)
				return
			}
			got <- seen{r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get(oip.HeaderInferenceHeaderContentLength), dreq}
			out := dreq.Inputs[0].Tensor
			out.Name = "OUTPUT0"
			v := out.Data.([]int32)
			for i := range v {
				v[i]++
			}
			resp := &oip.InferResponse{Model: "add one", Version: "1", ID: dreq.ID, Outputs: []oip.InferOutput{{Tensor: out}}}
			body, rhl, err := oip.EncodeRESTResponse(resp, dreq.BinaryOutput)
			if err != nil {
				t.Error(err)
				return
			}
			if rhl >= 0 {
				w.Header().Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(rhl))
				w.Header().Set("Content-Type", "application/octet-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Write(body)
		}))
		c, err := client.NewREST(srv.URL, binary, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Infer(context.Background(), req)
		c.Close()
		srv.Close()
		if err != nil {
			t.Fatalf("binary=%v: %v", binary, err)
		}
		s := <-got
		if s.uri != "/v2/models/add%20one/versions/1/infer" || s.req.ID != "42" {
			t.Errorf("binary=%v: server saw %+v", binary, s)
		}
		if binary != (s.ctype == "application/octet-stream") || binary != (s.ihcl != "") {
			t.Errorf("binary=%v: Content-Type %q, header length %q", binary, s.ctype, s.ihcl)
		}
		out, ok := resp.Output("OUTPUT0")
		if !ok {
			t.Fatalf("binary=%v: no OUTPUT0 in %+v", binary, resp)
		}
		if v, _ := out.Data.([]int32); len(v) != 4 || v[0] != 2 || v[3] != 5 {
			t.Errorf("binary=%v: OUTPUT0 = %v", binary, out.Data)
		}
		if resp.Model != "add one" || resp.ID != "42" {
			t.Errorf("binary=%v: response %+v", binary, resp)
		}
	}
}

func TestRESTInferErrors(t *testing.T) {
	in, _ := tensor.New("X", tensor.FP32, []int64{1}, []float32{1})
	req := &oip.InferRequest{Model: "m", Inputs: []oip.InferInput{{Tensor: in}}}
	ctx := context.Background()

	c, _ := restServer(t, inferHandler(400, nil, []byte(`{"error":"unknown input X"}`)), client.Options{})
	_, err := c.Infer(ctx, req)
	if e := asError(t, err); e.HTTPStatus != 400 || e.Message != "unknown input X" {
		t.Errorf("400: %+v", e)
	}

	c, _ = restServer(t, inferHandler(200, nil, []byte(`{"outputs": 7}`)), client.Options{})
	_, err = c.Infer(ctx, req)
	if e := asError(t, err); e.HTTPStatus != 200 || e.Err == nil || string(e.Body) != `{"outputs": 7}` {
		t.Errorf("undecodable: %+v", e)
	}

	c, _ = restServer(t, inferHandler(200, map[string]string{oip.HeaderInferenceHeaderContentLength: "x"}, []byte(`{}`)), client.Options{})
	_, err = c.Infer(ctx, req)
	if e := asError(t, err); e.HTTPStatus != 200 || !strings.Contains(e.Message, "not an integer") {
		t.Errorf("bad header: %+v", e)
	}

	bad, _ := tensor.New("X", tensor.FP32, []int64{2}, []float32{1, 2})
	bad.Data = []int32{1, 2} // wrong Go type for FP32
	if _, err := c.Infer(ctx, &oip.InferRequest{Model: "m", Inputs: []oip.InferInput{{Tensor: bad}}}); asError(t, err).Err == nil {
		t.Error("an unencodable request gave no cause")
	}
	if _, err := c.Infer(ctx, nil); err == nil {
		t.Error("nil request accepted")
	}
}

func BenchmarkRESTPostInfer(b *testing.B) {
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
	body := bytes.Repeat([]byte("x"), 1024)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.PostInfer(ctx, "m", "", body, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := client.ParseHeaders([]string{"Authorization: Bearer x", " X-Tenant:a ", ""})
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Authorization": {"Bearer x"}, "X-Tenant": {"a"}}
	if len(h) != len(want) || h.Get("Authorization") != "Bearer x" || h.Get("X-Tenant") != "a" {
		t.Errorf("ParseHeaders = %v, want %v", h, want)
	}
	if _, err := client.ParseHeaders([]string{"no colon"}); err == nil {
		t.Error("ParseHeaders(\"no colon\"): no error")
	}
}

// TestRESTResendsAfterServerClosedConnection: a server that drops a
// connection without answering (as uvicorn does with a keep-alive
// connection it times out while a request arrives) gets the POST once more
// on a new connection; a server that drops every connection is an error.
func TestRESTResendsAfterServerClosedConnection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		drops   int
		wantErr bool
	}{{"first connection dropped", 1, false}, {"every connection dropped", 1 << 30, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var accepted atomic.Int32
			go func() {
				for n := 0; ; n++ {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					go func(conn net.Conn, n int) {
						defer conn.Close()
						br := bufio.NewReader(conn)
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						_, _ = io.Copy(io.Discard, req.Body)
						if n < tc.drops {
							conn.(*net.TCPConn).SetLinger(0) // a reset, not a FIN
							return
						}
						_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
					}(conn, n)
				}
			}()
			c, err := client.NewREST("http://"+ln.Addr().String(), false, client.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(context.Background(), http.MethodPost, "/v2/models/m/infer", nil, []byte(`{"inputs":[]}`))
			if tc.wantErr {
				if err == nil || accepted.Load() != 2 {
					t.Fatalf("got %v after %d connections, want an error after 2", err, accepted.Load())
				}
				return
			}
			if err != nil || resp.Status != http.StatusOK || accepted.Load() != 2 {
				t.Fatalf("got %v, %v after %d connections, want 200 after 2", resp, err, accepted.Load())
			}
		})
	}
}
