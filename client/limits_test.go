package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The caps on what a server sends (Options.MaxResponseBytes,
// MaxMessageBytes, MaxHeaderBytes): the excess is refused with an error
// naming the flag that raises the cap, and never held.

// capServer answers GET /endless with a chunked body that never ends,
// /exact?n= with an n-byte body of unknown length, /declared with a
// Content-Length of 500 MB.
func capServer(t *testing.T) string {
	t.Helper()
	chunk := []byte(strings.Repeat("1,", 16<<10))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /endless", func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /exact", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for n > 0 {
			k, _ := w.Write(chunk[:min(n, len(chunk))])
			n -= k
			w.(http.Flusher).Flush() // no Content-Length
		}
	})
	mux.HandleFunc("GET /declared", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "524288000")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// headerServer answers every request with an n-byte header line name.
func headerServer(t *testing.T, name string, n int) string {
	t.Helper()
	answer := []byte("HTTP/1.1 200 OK\r\n" + name + ": " + strings.Repeat("a", n) + "\r\nContent-Length: 2\r\n\r\n{}")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		rw.Write(answer)
		rw.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func limitsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRESTBodyCap(t *testing.T) {
	base := capServer(t)
	const max = 4 << 20
	c, err := NewREST(base, false, Options{MaxResponseBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := limitsCtx(t)

	if resp, err := c.Do(ctx, http.MethodGet, "/exact?n="+strconv.Itoa(max), nil, nil); err != nil || len(resp.Body) != max {
		t.Fatalf("a body of exactly the cap: %v", err)
	}
	for _, path := range []string{"/exact?n=" + strconv.Itoa(max+1), "/endless", "/declared"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.Do(ctx, http.MethodGet, path, nil, nil)
		runtime.ReadMemStats(&after)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(e.Message, "exceeds 4194304 bytes (--max-body-bytes)") {
			t.Errorf("%s: error %v, want a body too large naming --max-body-bytes", path, err)
			continue
		}
		if len(e.Body) > maxErrorBody {
			t.Errorf("%s: the error keeps %d bytes of the body, want at most %d", path, len(e.Body), maxErrorBody)
		}
		// The buffer doubles up to the cap: about twice the cap in all
		// (io.ReadAll, growing by a quarter, allocated five times it).
		if a := after.TotalAlloc - before.TotalAlloc; a > 3*max {
			t.Errorf("%s: reading allocated %d bytes, want under %d", path, a, 3*max)
		}
	}
}

func TestHeaderCap(t *testing.T) {
	ctx := limitsCtx(t)
	// send returns what the lean client allocated and its error.
	send := func(opts Options, n int, name string) (uint64, error) {
		c, err := NewREST(headerServer(t, name, n), false, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := c.PrepareInfer("m", "", []byte(`{"inputs":[]}`), -1)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = p.Send(ctx, 0)
		runtime.ReadMemStats(&after)
		// The same over net/http.
		if _, nerr := c.Do(ctx, http.MethodPost, "/v2/models/m/infer", nil, []byte("{}")); (nerr == nil) != (err == nil) && name != "Connection" {
			t.Errorf("%d-byte %s header: lean client %v, net/http %v", n, name, err, nerr)
		}
		return after.TotalAlloc - before.TotalAlloc, err
	}
	// 10 MB is refused at the default cap, by its bytes read, not held.
	allocated, err := send(Options{Connections: 1}, 10<<20, "X-Huge")
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "exceed 1048576 bytes (--max-header-bytes)") {
		t.Errorf("10 MB header: %v, want refused at 1 MiB naming --max-header-bytes", err)
	}
	// Its line's first 16 KiB are kept, the rest read and dropped.
	if allocated > 256<<10 {
		t.Errorf("10 MB header: the lean client allocated %d bytes, want under 256 KiB", allocated)
	}
	c, err := NewREST(headerServer(t, "X-Huge", 10<<20), false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, http.MethodGet, "/", nil, nil); err == nil || !strings.Contains(err.Error(), "Do: response headers exceed 1048576 bytes (--max-header-bytes): ") {
		t.Errorf("10 MB header over net/http: %v, want refused at 1 MiB naming --max-header-bytes", err)
	}
	// A larger cap lets a 2 MB header through; a long line's tail is
	// dropped unless the client needs its value.
	if _, err := send(Options{Connections: 1, MaxHeaderBytes: 4 << 20}, 2<<20, "X-Long"); err != nil {
		t.Errorf("2 MB header with a 4 MiB cap: %v", err)
	}
	if _, err := send(Options{Connections: 1}, 64<<10, "X-Long"); err != nil {
		t.Errorf("64 KiB header: %v", err)
	}
	if _, err := send(Options{Connections: 1}, 64<<10, "Connection"); !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("64 KiB Connection header: %v, want malformed (its value is needed whole)", err)
	}
}

// manyEntries is a ModelInferResponse of n 4-byte raw_output_contents.
func manyEntries(n int) *inferencepb.ModelInferResponse {
	m := &inferencepb.ModelInferResponse{ModelName: "m"}
	m.RawOutputContents = make([][]byte, n)
	for i := range m.RawOutputContents {
		m.RawOutputContents[i] = []byte{1, 0, 0, 0}
	}
	return m
}

func TestDecodedSize(t *testing.T) {
	// A million 4-byte entries: 6 MB on the wire, 136 MB allocated to
	// decode (TestDecodeCost below measures it).
	b := mustMarshal(manyEntries(1_000_000))
	if err := checkDecodedSize(b, inferResponse, DefaultMaxResponseBytes); !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "--grpc-max-message-bytes") {
		t.Errorf("a million raw entries: %v, want refused at the default cap", err)
	}
	// A 16 MiB FP32 tensor, raw or typed, passes the default.
	raw := mustMarshal(&inferencepb.ModelInferResponse{RawOutputContents: [][]byte{make([]byte, 16<<20)}})
	typed := mustMarshal(&inferencepb.ModelInferResponse{Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
		{Name: "o", Datatype: "FP32", Contents: &inferencepb.InferTensorContents{Fp32Contents: make([]float32, 4<<20)}}}})
	for name, b := range map[string][]byte{"raw": raw, "typed": typed} {
		if err := checkDecodedSize(b, inferResponse, DefaultMaxResponseBytes); err != nil {
			t.Errorf("16 MiB %s tensor: %v", name, err)
		}
		if size := decodedSize(b, inferResponse, DefaultMaxResponseBytes); size < 16<<20 || size > 17<<20 {
			t.Errorf("16 MiB %s tensor: decoded size %d", name, size)
		}
	}
	// Small varints of an int64 list take eight bytes each.
	zeros := mustMarshal(&inferencepb.ModelInferResponse{Outputs: []*inferencepb.ModelInferResponse_InferOutputTensor{
		{Name: "o", Datatype: "INT64", Contents: &inferencepb.InferTensorContents{Int64Contents: make([]int64, 1<<20)}}}})
	if size := decodedSize(zeros, inferResponse, DefaultMaxResponseBytes); size < 8<<20 {
		t.Errorf("a million int64 zeros (%d bytes on the wire): decoded size %d, want 8 MiB or more", len(zeros), size)
	}
	// Truncated or malformed input is left to protobuf.
	for _, b := range [][]byte{b[:len(b)/2], {0xff}, protowire.AppendTag(nil, 6, protowire.BytesType)} {
		decodedSize(b, inferResponse, DefaultMaxResponseBytes)
	}
}

// TestDecodeCost measures what decoding many small entries allocates:
// entryCost must not be above it (it would refuse messages that fit).
func TestDecodeCost(t *testing.T) {
	const n = 100_000
	b := mustMarshal(manyEntries(n))
	var m inferencepb.ModelInferResponse
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	perEntry := int64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("decoding %d 4-byte entries allocates %d bytes per entry", n, perEntry)
	if perEntry < entryCost {
		t.Errorf("decoding allocates %d bytes per entry, less than entryCost %d", perEntry, entryCost)
	}
}

func TestGRPCDecodedCap(t *testing.T) {
	_, addr := startH2CServer(t)
	c := newTestGRPC(t, addr, Options{MaxMessageBytes: 8 << 20})
	ctx := limitsCtx(t)
	// The echo model answers with the request's 100,000 raw entries: 600
	// kB on the wire, 13 MB to decode.
	req := &inferencepb.ModelInferRequest{ModelName: "echo", RawInputContents: manyEntries(100_000).RawOutputContents}

	cctx, cancel := c.Context(ctx)
	_, err := c.Stub().ModelInfer(cctx, req)
	cancel()
	if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "--grpc-max-message-bytes") {
		t.Errorf("grpc-go: %v, want INTERNAL naming --grpc-max-message-bytes", err)
	}

	p, _ := prepare(t, c, "echo", req.RawInputContents...)
	if _, err := p.Send(ctx, true); !errors.Is(err, ErrResponseTooLarge) || status.Code(err) != codes.ResourceExhausted {
		t.Errorf("lean transport, kept: %v, want RESOURCE_EXHAUSTED wrapping ErrResponseTooLarge", err)
	}
	if _, err := p.Send(ctx, false); err != nil {
		t.Errorf("lean transport, dropped unread: %v", err)
	}
	// A few entries pass.
	p, _ = prepare(t, c, "echo", req.RawInputContents[:10]...)
	if _, err := p.Send(ctx, true); err != nil {
		t.Errorf("ten entries: %v", err)
	}
}
