package reference_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Hostile input: requests built to make a server allocate without bound,
// spin, crash or hang. Each must get a 4xx (or a closed connection) quickly,
// the server must stay live after each, and the heap must not balloon.
//
// Measured on the development machine (2 shared cores, with and without
// -race): peak HeapInuse growth over the whole sequence 9-14 MiB, of which
// about 6 MiB are the two 2 MiB over-limit bodies the test itself builds and
// sends; 1-3 MiB remain after a GC. The asserted bound is 64 MiB.

const hostileMaxBody = 1 << 20

func startHostile(t *testing.T, opts ...func(*reference.Config)) *reference.Server {
	t.Helper()
	return referencetest.Start(t, append([]func(*reference.Config){func(c *reference.Config) {
		c.MaxBodyBytes = hostileMaxBody
		c.GRPCMaxMessageBytes = hostileMaxBody
		c.ReadTimeout = time.Second
		c.ReadHeaderTimeout = time.Second
	}}, opts...)...)
}

// heapSampler records the peak HeapInuse while it runs.
type heapSampler struct {
	before uint64
	peak   atomic.Uint64
	stop   chan struct{}
	done   sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapSampler{before: ms.HeapInuse, stop: make(chan struct{})}
	h.peak.Store(ms.HeapInuse)
	h.done.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	})
	return h
}

// growth stops sampling and returns the peak growth and the growth that
// remains after a GC.
func (h *heapSampler) growth() (peak, retained int64) {
	close(h.stop)
	h.done.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(h.peak.Load()) - int64(h.before), int64(ms.HeapInuse) - int64(h.before)
}

func TestHostileInput(t *testing.T) {
	srv := startHostile(t)
	// A second server without a practical element limit: the decoders alone
	// must then keep a lying shape from costing memory.
	unlimited := startHostile(t, func(c *reference.Config) { c.MaxTensorElements = 1 << 62 })
	base := srv.HTTPURL()
	grpcClient := dial(t, srv.GRPCAddr())

	stillLive := func(t *testing.T) {
		t.Helper()
		for _, s := range []*reference.Server{srv, unlimited} {
			if r := get(t, s.HTTPURL()+"/v2/health/live"); r.status != http.StatusOK {
				t.Fatalf("server not live after hostile request: %d %s", r.status, r.body)
			}
		}
		if _, err := grpcClient.ServerLive(ctxT(t), &inferencepb.ServerLiveRequest{}); err != nil {
			t.Fatalf("gRPC not live after hostile request: %v", err)
		}
	}
	// quick bounds a hostile request's handling time. It is a hang detector
	// (a generous bound for shared, race-enabled machines), not a timing target.
	quick := func(t *testing.T, start time.Time) {
		t.Helper()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	}

	heap := startHeapSampler()
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"header length 1 GiB on a small body", func(t *testing.T) {
			r := post(t, base+"/v2/models/add_sub/infer", addSubJSON, oip.HeaderInferenceHeaderContentLength, "1073741824")
			wantError(t, r, http.StatusBadRequest, oip.HeaderInferenceHeaderContentLength, "1073741824")
		}},
		{"header length beyond int64", func(t *testing.T) {
			r := post(t, base+"/v2/models/add_sub/infer", addSubJSON, oip.HeaderInferenceHeaderContentLength, "99999999999999999999999")
			wantError(t, r, http.StatusBadRequest, oip.HeaderInferenceHeaderContentLength)
		}},
		{"shape product overflows int64", func(t *testing.T) {
			body := `{"inputs":[{"name":"INPUT0","shape":[9223372036854775807,2],"datatype":"INT32","data":[1,2,3]}]}`
			for _, s := range []*reference.Server{srv, unlimited} {
				wantError(t, post(t, s.HTTPURL()+"/v2/models/identity_int32/infer", body), http.StatusBadRequest)
			}
		}},
		{"shape of a billion elements with three values", func(t *testing.T) {
			body := `{"inputs":[{"name":"INPUT0","shape":[1000000000],"datatype":"INT32","data":[1,2,3]}]}`
			for _, s := range []*reference.Server{srv, unlimited} {
				start := time.Now()
				wantError(t, post(t, s.HTTPURL()+"/v2/models/versioned/infer", body), http.StatusBadRequest, "INPUT0")
				quick(t, start)
			}
		}},
		{"binary shape of a billion elements with twelve bytes", func(t *testing.T) {
			hdr := `{"inputs":[{"name":"INPUT0","shape":[1000000000],"datatype":"INT32","parameters":{"binary_data_size":12}}]}`
			for _, s := range []*reference.Server{srv, unlimited} {
				start := time.Now()
				r := post(t, s.HTTPURL()+"/v2/models/versioned/infer", hdr+strings.Repeat("x", 12),
					oip.HeaderInferenceHeaderContentLength, strconv.Itoa(len(hdr)))
				wantError(t, r, http.StatusBadRequest, "INPUT0")
				quick(t, start)
			}
		}},
		{"truncated binary payloads", func(t *testing.T) {
			hdr := `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},` +
				`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}]}`
			full := hdr + strings.Repeat("\x01\x00\x00\x00", 32)
			for _, cut := range []int{1, 4, 63, 64, 65, 127} {
				body := full[:len(full)-cut]
				r := post(t, base+"/v2/models/add_sub/infer", body, oip.HeaderInferenceHeaderContentLength, strconv.Itoa(len(hdr)))
				wantError(t, r, http.StatusBadRequest)
			}
			// One byte too many, and a header length that splits the JSON.
			r := post(t, base+"/v2/models/add_sub/infer", full+"x", oip.HeaderInferenceHeaderContentLength, strconv.Itoa(len(hdr)))
			wantError(t, r, http.StatusBadRequest)
			r = post(t, base+"/v2/models/add_sub/infer", full, oip.HeaderInferenceHeaderContentLength, strconv.Itoa(len(hdr)/2))
			wantError(t, r, http.StatusBadRequest)
			// A BYTES element whose length prefix claims 4 GiB - 1.
			bhdr := `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"BYTES","parameters":{"binary_data_size":8}}]}`
			r = post(t, base+"/v2/models/identity_bytes/infer", bhdr+"\xff\xff\xff\xffabcd", oip.HeaderInferenceHeaderContentLength, strconv.Itoa(len(bhdr)))
			wantError(t, r, http.StatusBadRequest, "INPUT0")
		}},
		{"data nested 100000 deep", func(t *testing.T) {
			deep := strings.Repeat("[", 100_000) + "1" + strings.Repeat("]", 100_000)
			body := `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"INT32","data":` + deep + `}]}`
			start := time.Now()
			wantError(t, post(t, base+"/v2/models/identity_int32/infer", body), http.StatusBadRequest)
			quick(t, start)
		}},
		{"parameters nested 100000 deep", func(t *testing.T) {
			deep := strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000)
			body := `{"parameters":{"p":` + deep + `},"inputs":[]}`
			wantError(t, post(t, base+"/v2/models/identity_int32/infer", body), http.StatusBadRequest)
		}},
		{"shape of rank 100000", func(t *testing.T) {
			shape := strings.Repeat("1,", 99_999) + "1"
			body := `{"inputs":[{"name":"INPUT0","shape":[` + shape + `],"datatype":"INT32","data":[1]}]}`
			wantError(t, post(t, base+"/v2/models/identity_int32/infer", body), http.StatusBadRequest, "INPUT0")
		}},
		{"ten thousand inputs", func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"inputs":[`)
			for i := range 10_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"name":"I` + strconv.Itoa(i) + `","shape":[1],"datatype":"INT32","data":[1]}`)
			}
			b.WriteString(`]}`)
			wantError(t, post(t, base+"/v2/models/identity_int32/infer", b.String()), http.StatusBadRequest)
		}},
		{"body over MaxBodyBytes with Content-Length", func(t *testing.T) {
			big := bytes.Repeat([]byte{' '}, 2*hostileMaxBody)
			wantError(t, do(t, http.MethodPost, base+"/v2/models/add_sub/infer", big), http.StatusRequestEntityTooLarge)
		}},
		{"body over MaxBodyBytes, chunked", func(t *testing.T) {
			// An io.Reader of unknown length makes net/http send it chunked,
			// so the server only finds out while reading.
			req, _ := http.NewRequest(http.MethodPost, base+"/v2/models/add_sub/infer",
				io.MultiReader(strings.NewReader(`{"inputs":[{"data":"`), bytes.NewReader(bytes.Repeat([]byte{'a'}, 2*hostileMaxBody))))
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err) // the server answers before closing, so the client sees the 413
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantError(t, httpResult{status: resp.StatusCode, header: resp.Header, body: body}, http.StatusRequestEntityTooLarge)
		}},
		{"body that never finishes", func(t *testing.T) {
			start := time.Now()
			rawExchange(t, srv.HTTPAddr(), "POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
				"Content-Length: 1000\r\n\r\n{\"inputs\":")
			quick(t, start)
		}},
		{"headers that never finish", func(t *testing.T) {
			start := time.Now()
			rawExchange(t, srv.HTTPAddr(), "POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Le")
			quick(t, start)
		}},
		{"invalid path escape", func(t *testing.T) {
			resp := rawExchange(t, srv.HTTPAddr(), "GET /v2/models/%zz/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if !strings.HasPrefix(resp, "HTTP/1.1 4") {
				t.Fatalf("answer %q, want 4xx", resp)
			}
		}},
		{"gRPC message over the size limit", func(t *testing.T) {
			pb := &inferencepb.ModelInferRequest{ModelName: "identity_uint8",
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "UINT8", Shape: []int64{1, 2 * hostileMaxBody}}},
				RawInputContents: [][]byte{make([]byte, 2*hostileMaxBody)}}
			_, err := grpcClient.ModelInfer(ctxT(t), pb)
			wantCode(t, err, codes.ResourceExhausted)
		}},
		{"gRPC mixed raw and typed", func(t *testing.T) {
			pb := &inferencepb.ModelInferRequest{ModelName: "add_sub",
				Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
					{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}},
					int32Input("INPUT1", []int64{1, 16}, sixteen(1)...),
				},
				RawInputContents: [][]byte{make([]byte, 64)}}
			_, err := grpcClient.ModelInfer(ctxT(t), pb)
			wantCode(t, err, codes.InvalidArgument)
		}},
		{"gRPC shape overflow and lying shapes", func(t *testing.T) {
			for _, shape := range [][]int64{{9223372036854775807, 2}, {1_000_000_000}, {-1}, {-5, -5}} {
				typed := &inferencepb.ModelInferRequest{ModelName: "versioned",
					Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", shape, 1, 2, 3)}}
				raw := &inferencepb.ModelInferRequest{ModelName: "versioned",
					Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: shape}},
					RawInputContents: [][]byte{make([]byte, 12)}}
				for _, pb := range []*inferencepb.ModelInferRequest{typed, raw} {
					for _, s := range []*reference.Server{srv, unlimited} {
						_, err := dial(t, s.GRPCAddr()).ModelInfer(ctxT(t), pb)
						if code := statusCode(err); code != codes.InvalidArgument && code != codes.ResourceExhausted {
							t.Errorf("shape %v: %v, want INVALID_ARGUMENT or RESOURCE_EXHAUSTED", shape, err)
						}
					}
				}
			}
		}},
		{"gRPC BYTES length prefix beyond the buffer", func(t *testing.T) {
			buf := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
			pb := &inferencepb.ModelInferRequest{ModelName: "identity_bytes",
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "BYTES", Shape: []int64{1, 1}}},
				RawInputContents: [][]byte{append(buf, "abcd"...)}}
			_, err := grpcClient.ModelInfer(ctxT(t), pb)
			wantCode(t, err, codes.InvalidArgument, "INPUT0")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t)
			stillLive(t)
		})
	}
	peak, retained := heap.growth()
	t.Logf("heap growth during hostile requests: peak %.1f MiB, retained after GC %.1f MiB", float64(peak)/(1<<20), float64(retained)/(1<<20))
	if peak > 64<<20 {
		t.Errorf("peak heap growth %d MiB, want < 64 MiB", peak>>20)
	}
}

// rawExchange writes request on a fresh TCP connection and reads until the
// server closes it, failing if that takes longer than 10s. It returns what
// the server sent.
func rawExchange(t *testing.T, addr, request string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("server kept the connection open: %v (got %q)", err, got)
	}
	return string(got)
}
