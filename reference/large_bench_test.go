package reference

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// partsRecorder is a recorder that takes an answer in parts, as the
// server's own HTTP/1.1 writer does (writev); copying them into the
// recorder stands for the socket's copy into the kernel.
type partsRecorder struct{ *recorder }

func (w partsRecorder) WriteParts(first []byte, rest [][]byte) (int64, error) {
	n, _ := w.body.Write(first)
	for _, r := range rest {
		m, _ := w.body.Write(r)
		n += m
	}
	return int64(n), nil
}

// identityHandler returns a function that serves one identity_fp32 REST
// binary request of n elements through the REST handler, in process, and
// checks the answer's length. With parts the answer is written as the
// server's HTTP/1.1 path writes it, else as net/http's.
func identityHandler(t testing.TB, n int, parts bool) func() {
	s, err := New(Config{HTTPAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i)
	}
	in := []oip.InferInput{{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, int64(n)}, Data: data}}}
	body, hl, err := oip.EncodeRESTRequest(&oip.InferRequest{Inputs: in}, oip.RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/v2/models/identity_fp32/infer", nil)
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	r.ContentLength = int64(len(body))
	rb := new(replay)
	r.Body = rb
	w := &recorder{h: http.Header{}}
	var rw http.ResponseWriter = w
	if parts {
		rw = partsRecorder{w}
	}
	return func() {
		rb.Reset(body)
		clear(w.h)
		w.status = 0
		w.body.Reset()
		s.serveHTTP(rw, r)
		if w.status != http.StatusOK || w.body.Len() < 4*n {
			t.Fatalf("HTTP %d, %d bytes: %.200s", w.status, w.body.Len(), w.body.Bytes())
		}
	}
}

// BenchmarkIdentityBinaryHandler is the server's own work on a large REST
// binary tensor (1 MiB and 16 MiB FP32), without the network: the body
// read, the decode, the model and the response encoding; writev is the
// answer written in parts as the server's HTTP/1.1 path does (the input
// viewed in the body, answered from there), copy as net/http's is (the
// answer copied after its JSON header first).
func BenchmarkIdentityBinaryHandler(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"1MiB", 1 << 18}, {"16MiB", 1 << 22}} {
		for _, parts := range []bool{true, false} {
			name := c.name + "/copy"
			if parts {
				name = c.name + "/writev"
			}
			b.Run(name, func(b *testing.B) {
				serve := identityHandler(b, c.n, parts)
				b.SetBytes(int64(4 * c.n))
				b.ReportAllocs()
				for b.Loop() {
					serve()
				}
			})
		}
	}
}

// Allocations per identity_fp32 REST binary request answered in parts (as
// the server's HTTP/1.1 path answers), measured then rounded up: 16-18 at
// 1 MiB and 16 MiB. The body buffer comes from the size-classed pools, the
// input is viewed in it and the answer written from there, so the count
// does not grow with the body: before the views it was 21-28 (the decoded
// input and the model's copy among them, each starting a collection every
// few 16 MiB requests), and growing a 16 MiB body's buffer as it arrived
// made 44.
const maxIdentityBinaryAllocs = 22

func TestIdentityBinaryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, n := range []int{1 << 18, 1 << 22} {
		serve := identityHandler(t, n, true)
		serve()
		if got := testing.AllocsPerRun(20, serve); got > maxIdentityBinaryAllocs {
			t.Errorf("%d FP32 elements over REST binary: %.0f allocations per request, want at most %d", n, got, maxIdentityBinaryAllocs)
		}
	}
}
